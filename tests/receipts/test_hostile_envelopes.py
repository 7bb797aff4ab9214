"""Hostile envelopes are refused, never a crash (docs/threat-model.md).

Each file here is read by the real CLI (`receipt verify`, `receipt import`) and
by `prove` through an `external` provider: too large, nested too deep, not in
UTF-8, a signed payload that is not its own RFC 8785 form, lone surrogates,
terminal escapes in signed fields. Every refusal exits 1 with the verb's
``--json`` shape; nothing exits 3.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from receipts_helpers import T0, identities, make_workspace, pem_text, signed, statement
from repo_paths import REPO_ROOT

from changeloop.model import ContentIdentity
from changeloop.signing.dsse import MAX_ENVELOPE_BYTES, PAYLOAD_TYPE, sign_envelope
from changeloop.signing.jcs import canonicalize
from changeloop.signing.keys import generate_private_key, public_pem

KEY = generate_private_key()
WEB = ContentIdentity(tree="3f2a" + "0" * 36, head="71be" + "0" * 36, dirty=False)
GOOD_STATEMENT = statement(subjects={"web": WEB})
GOOD_PAYLOAD = canonicalize(GOOD_STATEMENT)
DEEP = 100_000


def cli(*argv: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """The real console entry point in a fresh interpreter (exit 3 and tracebacks show)."""
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    entry = "import sys; from changeloop.cli.main import main; sys.exit(main(sys.argv[1:]))"
    return subprocess.run(
        [sys.executable, "-c", entry, *argv],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )


@pytest.fixture
def pub(tmp_path: Path) -> Path:
    path = tmp_path / "ci.pub"
    path.write_bytes(public_pem(KEY.public_key()))
    return path


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    make_workspace(root, pub_pem=pem_text(KEY))
    return root


def verify_json(path: Path, pub: Path, *extra: str) -> tuple[int, dict[str, Any], str]:
    result = cli("receipt", "verify", str(path), "--public-key", str(pub), "--json", *extra)
    assert "Traceback" not in result.stderr, result.stderr
    doc = json.loads(result.stdout)
    return result.returncode, doc, result.stderr


def import_json(path: Path, root: Path) -> tuple[int, dict[str, Any]]:
    result = cli(
        "receipt", "import", str(path), "--change", "add-review", "--root", str(root), "--json"
    )
    assert "Traceback" not in result.stderr, result.stderr
    return result.returncode, json.loads(result.stdout)


def refused_by_both(path: Path, pub: Path, root: Path, words: str) -> dict[str, Any]:
    """`verify` and `import` both exit 1 in their own --json shape, naming ``words``."""
    code, doc, _ = verify_json(path, pub)
    assert code == 1, doc
    assert doc["valid"] is False and doc["file"] == str(path)
    assert doc["errors"] and words in doc["errors"][0]["message"], doc
    assert doc["errors"][0]["path"] == str(path)
    code, imported = import_json(path, root)
    assert code == 1, imported
    assert imported["imported"] == [] and imported["change"] == "add-review"
    assert any(words in e["message"] for e in imported["errors"]), imported
    assert not (root / "openspec" / "changes" / "add-review" / "receipts").exists()
    return doc


def resigned(payload: bytes, key: Any = KEY) -> bytes:
    """An envelope over exactly ``payload``, signed by the trusted key."""
    return sign_envelope(payload, PAYLOAD_TYPE, key)


# -- nesting ---------------------------------------------------------------------------
def test_a_100000_deep_envelope_is_refused_not_a_crash(
    tmp_path: Path, pub: Path, workspace: Path
) -> None:
    deep = tmp_path / "deep.json"
    deep.write_text("[" * DEEP + "]" * DEEP)
    doc = refused_by_both(deep, pub, workspace, "deep")
    assert doc["check"] == "json" and "64" in doc["reason"]


def test_deep_nesting_inside_a_field_and_inside_the_signed_payload(
    tmp_path: Path, pub: Path, workspace: Path
) -> None:
    inner = tmp_path / "inner.json"
    inner.write_text(
        '{"payload": "", "payloadType": "x", "signatures": ' + "[" * DEEP + "]" * DEEP + "}"
    )
    refused_by_both(inner, pub, workspace, "deep")
    # Deep nesting the trusted key signed: refused at the payload, still exit 1.
    signed_deep = tmp_path / "signed-deep.json"
    signed_deep.write_bytes(resigned(b'{"a":' + b"[" * 64 + b"]" * 64 + b"}"))
    code, doc, _ = verify_json(signed_deep, pub)
    assert code == 1 and doc["check"] == "json" and "65 deep" in doc["reason"]


def test_nesting_at_the_limit_is_parsed_brackets_inside_strings_do_not_count(
    tmp_path: Path, pub: Path
) -> None:
    # 64 levels is allowed (it then fails later, as a non-statement); brackets in
    # strings are text, not nesting.
    at_limit = tmp_path / "limit.json"
    at_limit.write_bytes(resigned(b"[" * 64 + b'"' + b"[" * 200 + b'"' + b"]" * 64))
    code, doc, _ = verify_json(at_limit, pub)
    assert code == 1 and doc["check"] == "statement", doc


# -- size ------------------------------------------------------------------------------
def test_a_200_mb_envelope_is_refused_without_reading_it(
    tmp_path: Path, pub: Path, workspace: Path
) -> None:
    big = tmp_path / "big.json"
    with big.open("wb") as handle:  # sparse: 200 MB on paper, nothing on disk
        handle.write(b'{"payload": "')
        handle.truncate(200 * 1024 * 1024)
    refused_by_both(big, pub, workspace, "too large")
    # Peak memory of the whole verify, measured by the process itself.
    probe = (
        "import sys\n"
        "from changeloop.cli.main import main\n"
        f"code = main(['receipt', 'verify', {str(big)!r}, '--public-key', {str(pub)!r}])\n"
        # VmHWM, not ru_maxrss: ru_maxrss survives exec, so it would report the size
        # of the (large, late-in-the-suite) pytest process this one was forked from.
        "hwm = [l for l in open('/proc/self/status') if l.startswith('VmHWM:')][0]\n"
        "print(code, hwm.split()[1])\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    out = subprocess.run(
        [sys.executable, "-c", probe],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    ).stdout.split()
    code, peak_kib = int(out[0]), int(out[1])
    assert code == 1
    assert peak_kib < 150 * 1024, f"verify of a 200 MB file peaked at {peak_kib} KiB"


def test_the_cap_is_4_mib_exactly(tmp_path: Path, pub: Path) -> None:
    good = signed(GOOD_STATEMENT, KEY)
    fits = tmp_path / "fits.json"  # trailing JSON whitespace up to the cap: still valid
    fits.write_bytes(good + b" " * (MAX_ENVELOPE_BYTES - len(good)))
    assert verify_json(fits, pub)[0] == 0
    over = tmp_path / "over.json"
    over.write_bytes(good + b" " * (MAX_ENVELOPE_BYTES - len(good) + 1))
    code, doc, _ = verify_json(over, pub)
    assert code == 1 and doc["check"] == "size" and str(MAX_ENVELOPE_BYTES + 1) in doc["reason"]


def test_a_fifo_is_refused_without_blocking(tmp_path: Path, pub: Path) -> None:
    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)
    code, doc, _ = verify_json(fifo, pub)
    assert code == 1 and "regular file" in doc["reason"]


# -- encoding and canonical form -------------------------------------------------------
def _pretty(payload: bytes) -> bytes:
    return json.dumps(json.loads(payload), indent=1).encode()


def _reordered(payload: bytes) -> bytes:
    doc = json.loads(payload)
    return json.dumps(
        dict(reversed(list(doc.items()))), separators=(",", ":"), ensure_ascii=False
    ).encode()


def _escaped(payload: bytes) -> bytes:
    return payload.replace(b'"_type"', b'"\\u005ftype"', 1)


def _number_form(payload: bytes) -> bytes:
    text = payload.decode()
    marker = '"durationMs":'
    at = text.index(marker) + len(marker)
    end = at
    while text[end].isdigit():
        end += 1
    return (text[:end] + ".0" + text[end:]).encode()


NON_CANONICAL: dict[str, Callable[[bytes], bytes]] = {
    "utf-8 BOM": lambda p: b"\xef\xbb\xbf" + p,
    "utf-16": lambda p: p.decode().encode("utf-16"),
    "utf-16-le without BOM": lambda p: p.decode().encode("utf-16-le"),
    "utf-32": lambda p: p.decode().encode("utf-32"),
    "whitespace": _pretty,
    "key order": _reordered,
    "escaped key": _escaped,
    "number form": _number_form,
    "trailing newline": lambda p: p + b"\n",
}


@pytest.mark.parametrize("form", sorted(NON_CANONICAL))
def test_a_signed_payload_in_any_other_form_is_refused(
    tmp_path: Path, pub: Path, form: str
) -> None:
    payload = NON_CANONICAL[form](GOOD_PAYLOAD)
    assert payload != GOOD_PAYLOAD
    path = tmp_path / "r.json"
    path.write_bytes(resigned(payload))
    code, doc, _ = verify_json(path, pub)
    assert code == 1, (form, doc)
    assert doc["check"] == "payload" and doc["valid"] is False, (form, doc)


def test_the_canonical_payload_still_verifies(tmp_path: Path, pub: Path) -> None:
    path = tmp_path / "r.json"
    path.write_bytes(resigned(GOOD_PAYLOAD))
    code, doc, _ = verify_json(path, pub)
    assert code == 0 and doc["valid"] is True


def test_an_envelope_in_utf16_or_with_a_bom_is_refused(
    tmp_path: Path, pub: Path, workspace: Path
) -> None:
    text = signed(GOOD_STATEMENT, KEY).decode()
    for name, data in {
        "bom": b"\xef\xbb\xbf" + text.encode(),
        "utf16": text.encode("utf-16"),
    }.items():
        path = tmp_path / f"{name}.json"
        path.write_bytes(data)
        refused_by_both(path, pub, workspace, "UTF-8")


# -- lone surrogates -------------------------------------------------------------------
def test_a_signed_lone_surrogate_is_refused_in_json_mode(tmp_path: Path, pub: Path) -> None:
    payload = GOOD_PAYLOAD.replace(b'"issuer":"github-actions"', b'"issuer":"\\ud800"', 1)
    assert payload != GOOD_PAYLOAD
    path = tmp_path / "r.json"
    path.write_bytes(resigned(payload))
    code, doc, _ = verify_json(path, pub)
    assert code == 1 and doc["valid"] is False and "surrogate" in doc["reason"], doc


def test_a_lone_surrogate_in_the_envelope_is_refused(
    tmp_path: Path, pub: Path, workspace: Path
) -> None:
    doc = json.loads(signed(GOOD_STATEMENT, KEY))
    doc["signatures"][0]["keyid"] = "\ud800"
    path = tmp_path / "r.json"
    path.write_bytes(json.dumps(doc).encode())  # ensure_ascii: the escape \ud800
    refused_by_both(path, pub, workspace, "surrogate")
    raw = tmp_path / "raw.json"  # the surrogate's own (invalid) UTF-8 bytes
    raw.write_bytes(json.dumps(doc, ensure_ascii=False).encode("utf-8", "surrogatepass"))
    refused_by_both(raw, pub, workspace, "UTF-8")


# -- printing signed strings -----------------------------------------------------------
def test_terminal_escapes_in_signed_fields_never_reach_the_terminal(
    tmp_path: Path, pub: Path
) -> None:
    evil = "\x1b[2J\x1b[32mall good\x9b31m\u202e"
    stmt = statement(subjects={"web": WEB}, issuer=f"ci{evil}", provider=f"review{evil}")
    path = tmp_path / "r.json"
    path.write_bytes(signed(stmt, KEY))
    code, doc, err = verify_json(path, pub)
    assert code == 0 and doc["issuer"] == f"ci{evil}"  # the value itself is reported faithfully
    result = cli("receipt", "verify", str(path), "--public-key", str(pub), "--json")
    for stream in (result.stdout, result.stderr, err):
        assert not any(ch in stream for ch in ("\x1b", "\x9b", "\u202e")), repr(stream)
    assert "\\x1b[2J" in err
    # A refusal's reason quotes the signed change: escaped too.
    stmt = statement(subjects={"web": WEB}, change=f"add-review{evil}")
    path.write_bytes(signed(stmt, KEY))
    code, doc, err = verify_json(path, pub, "--change", "add-review")
    assert code == 1 and doc["check"] == "change"
    assert "\x1b" not in err and "\x1b" not in json.dumps(doc, ensure_ascii=False)


def test_a_newline_in_a_signed_field_cannot_fake_a_line(tmp_path: Path, pub: Path) -> None:
    stmt = statement(subjects={"web": WEB}, issuer="ci\nvalid: sha256:forged — all good")
    path = tmp_path / "r.json"
    path.write_bytes(signed(stmt, KEY))
    result = cli("receipt", "verify", str(path), "--public-key", str(pub))
    assert result.returncode == 0
    assert result.stderr.count("\n") == 1 and "ci\\nvalid" in result.stderr


# -- verify --json names what was signed -----------------------------------------------
def test_verify_json_reports_the_subjects_of_the_signed_statement(
    tmp_path: Path, pub: Path
) -> None:
    stmt = statement(subjects={"web": WEB})
    signed_tree = "9c1d" + "0" * 36
    stmt["subject"] = [{"name": "web", "digest": {"gitTree": signed_tree}}]
    path = tmp_path / "r.json"
    path.write_bytes(signed(stmt, KEY))
    code, doc, _ = verify_json(path, pub)
    assert code == 0
    assert doc["subjects"] == {"web": signed_tree}  # not the extension's repositories copy


# -- prove: each envelope judged on its own --------------------------------------------
def test_prove_judges_a_hostile_envelope_as_a_refusal_not_an_adapter_crash(
    workspace: Path,
) -> None:
    receipts = workspace / "openspec" / "changes" / "add-review" / "receipts"
    receipts.mkdir()
    (receipts / "deep.json").write_text("[" * DEEP + "]" * DEEP)
    with (receipts / "big.json").open("wb") as handle:
        handle.truncate(200 * 1024 * 1024)
    stmt = statement(subjects=identities(workspace), finished=T0)
    bom = b"\xef\xbb\xbf" + canonicalize(stmt)
    (receipts / "bom-payload.json").write_bytes(resigned(bom))
    result = cli("prove", "add-review", "--root", str(workspace), "--json")
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr
    doc = json.loads(result.stdout)
    (provider,) = [p for p in doc["providers"] if p["name"] == "review"]
    (receipt,) = provider["receipts"]
    assert receipt["status"] == "fail"
    reason = doc["claims"]["auth-boundary"]["reasons"]
    text = json.dumps(reason) + result.stderr
    assert "crash" not in text
    for name, words in (
        ("deep.json", "deep"),
        ("big.json", "too large"),
        ("bom-payload.json", "payload"),
    ):
        assert name in text and words in text, (name, text)


def test_verify_refusal_keeps_the_json_shape_for_garbage_bytes(tmp_path: Path, pub: Path) -> None:
    path = tmp_path / "r.json"
    path.write_bytes(base64.b64decode("AAECAwQF/+7d"))
    code, doc, _ = verify_json(path, pub)
    assert code == 1
    assert set(doc) >= {"version", "file", "valid", "check", "reason", "errors"}


@pytest.mark.parametrize(
    "body",
    [b'\\"' * (2 * 1024 * 1024 - 8), b'"' + b"\\" * (4 * 1024 * 1024 - 8), b'"a\\' * 1_000_000],
    ids=["escaped-quotes", "backslashes", "unterminated"],
)
def test_a_4_mib_file_of_quotes_and_backslashes_is_refused_not_stuck(
    tmp_path: Path, pub: Path, body: bytes
) -> None:
    # The nesting pre-scan cuts strings out first; a pattern that retried from
    # every quote took hours on these (cli() gives up after 120 s).
    path = tmp_path / "quotes.json"
    path.write_bytes(body)
    code, doc, _ = verify_json(path, pub)
    assert code == 1 and doc["check"] == "json", doc

"""Random mutations of a valid envelope never crash and never verify unless unchanged.

Mutations of bytes, JSON structure and encoding (UTF-16,
BOM, re-ordered keys, whitespace, escaped forms, base64 alphabets), including
payloads re-signed by the trusted key in a non-canonical form, fed to the
verification API, `receipt verify`, `receipt import` and `prove` (an external
provider reading a receipts directory).

"Unchanged" (docs/design.md) = the same payload bytes and signature bytes. The
oracle reads each mutant with a *different, lenient* reader (the standard
library's ``json.loads`` on bytes, which accepts UTF-16 and BOMs and keeps the
last of duplicate keys, and base64 in either alphabet): a mutant may verify only
if that reader, too, finds exactly the original payload and signature. So a
verifier that read a field another reader would read differently is caught.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import io
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from receipts_helpers import identities, make_workspace, pem_text

from changeloop.cli.main import main
from changeloop.signing.dsse import (
    PAYLOAD_TYPE,
    VerificationError,
    parse_envelope,
    sign_envelope,
    verify_signatures,
)
from changeloop.signing.jcs import canonicalize
from changeloop.signing.keys import generate_private_key, keyid, private_pem, public_pem
from changeloop.signing.verify import Expectation, verify_envelope

KEY = generate_private_key()
OTHER = generate_private_key()
CHANGE = "add-review"


class Setup:
    """One real workspace (two git repositories, an external provider) and its valid receipt."""

    def __init__(self, base: Path) -> None:
        self.root = base / "ws"
        self.root.mkdir()
        make_workspace(self.root, pub_pem=pem_text(KEY))
        self.trees = {r: i.tree for r, i in identities(self.root).items()}
        key = base / "ci.key"
        key.write_bytes(private_pem(KEY))
        key.chmod(0o600)
        good = base / "good.json"  # what CI's `receipt sign` writes
        with contextlib.redirect_stderr(io.StringIO()):
            assert (
                main(
                    [
                        "receipt",
                        "sign",
                        "--root",
                        str(self.root),
                        "--change",
                        CHANGE,
                        "--claims",
                        "auth-boundary",
                        "--key",
                        str(key),
                        "--issuer",
                        "github-actions",
                        "--out",
                        str(good),
                    ]
                )
                == 0
            )
        self.good = good.read_bytes()
        doc = json.loads(self.good)
        self.payload = base64.b64decode(doc["payload"])
        self.sig = base64.b64decode(doc["signatures"][0]["sig"])
        self.statement: dict[str, Any] = json.loads(self.payload)
        self.pub = base / "ci.pub"
        self.pub.write_bytes(public_pem(KEY.public_key()))
        self.receipts = self.root / "openspec" / "changes" / CHANGE / "receipts"
        self.scratch = base / "scratch"
        self.scratch.mkdir()
        self.expect = Expectation(
            change=CHANGE, trees=self.trees, claims=("auth-boundary",), issuer="github-actions"
        )


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> Setup:
    return Setup(tmp_path_factory.mktemp("props"))


# -- the oracle ------------------------------------------------------------------------
def _b64_lenient(text: Any) -> bytes | None:
    if not isinstance(text, str):
        return None
    stripped = "".join(text.split()).rstrip("=")
    padded = stripped + "=" * (-len(stripped) % 4)
    for alt in (b"+/", b"-_"):
        try:
            return base64.b64decode(padded, altchars=alt, validate=True)
        except (binascii.Error, ValueError):
            continue
    return None


def unchanged(data: bytes, s: Setup) -> bool:
    """Does a lenient, independent reader see the original payload and signature?"""
    try:
        doc = json.loads(data)
    except (ValueError, RecursionError):
        return False
    if not isinstance(doc, dict) or doc.get("payloadType") != PAYLOAD_TYPE:
        return False
    sigs = doc.get("signatures")
    if _b64_lenient(doc.get("payload")) != s.payload or not isinstance(sigs, list):
        return False
    return any(isinstance(g, dict) and _b64_lenient(g.get("sig")) == s.sig for g in sigs)


# -- mutations -------------------------------------------------------------------------
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=6,
)
ENCODINGS = ["utf-8", "utf-8-sig", "utf-16", "utf-16-le", "utf-16-be", "utf-32"]


@st.composite
def byte_edits(draw: st.DrawFn, good: bytes) -> bytes:
    data = bytearray(good)
    for _ in range(draw(st.integers(1, 3))):
        if not data:
            break
        at = draw(st.integers(0, len(data) - 1))
        op = draw(st.sampled_from(["flip", "set", "insert", "delete", "truncate"]))
        if op == "flip":
            data[at] ^= 1 << draw(st.integers(0, 7))
        elif op == "set":
            data[at] = draw(st.integers(0, 255))
        elif op == "insert":
            data[at:at] = draw(st.binary(min_size=1, max_size=4))
        elif op == "delete":
            del data[at]
        else:
            del data[at:]
    return bytes(data)


def _escape_some(text: str, draw: st.DrawFn) -> str:
    """Write a few ASCII letters of keys/values as \\uXXXX: the same JSON value."""
    out = []
    for ch in text:
        if ch.isalpha() and ch.isascii() and draw(st.integers(0, 40)) == 0:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return "".join(out)


@st.composite
def reencodings(draw: st.DrawFn, good: bytes) -> bytes:
    """The same envelope value, spelled differently: order, whitespace, escapes, encoding."""
    doc = json.loads(good)
    keys = draw(st.permutations(sorted(doc)))
    doc = {k: doc[k] for k in keys}
    indent = draw(st.sampled_from([None, 0, 2, "\t"]))
    separators = draw(st.sampled_from([None, (",", ":"), (" , ", " : ")]))
    text = json.dumps(doc, indent=indent, separators=separators, ensure_ascii=draw(st.booleans()))
    if draw(st.booleans()):
        text = _escape_some(text, draw)
    if draw(st.booleans()):
        text = draw(st.sampled_from([" ", "\n", "\r\n\t"])) + text + "\n"
    return text.encode(draw(st.sampled_from(ENCODINGS)))


def _b64_variant(raw: bytes, draw: st.DrawFn) -> Any:
    form = draw(
        st.sampled_from(
            ["std", "url", "std-nopad", "url-nopad", "spaced", "mixed", "junk", "number"]
        )
    )
    std = base64.b64encode(raw).decode()
    if form == "std":
        return std
    if form == "url":
        return base64.urlsafe_b64encode(raw).decode()
    if form == "std-nopad":
        return std.rstrip("=")
    if form == "url-nopad":
        return base64.urlsafe_b64encode(raw).decode().rstrip("=")
    if form == "spaced":
        at = draw(st.integers(0, len(std)))
        return std[:at] + draw(st.sampled_from([" ", "\n", "\t"])) + std[at:]
    if form == "mixed":
        return base64.urlsafe_b64encode(raw).decode() + "+/"
    if form == "junk":
        at = draw(st.integers(0, len(std)))
        return std[:at] + draw(st.sampled_from(["!", "*", "é", "\\", "=", "=="])) + std[at:]
    return len(raw)


@st.composite
def base64_forms(draw: st.DrawFn, good: bytes) -> bytes:
    doc = json.loads(good)
    payload = base64.b64decode(doc["payload"])
    sig = base64.b64decode(doc["signatures"][0]["sig"])
    doc["payload"] = _b64_variant(payload, draw)
    doc["signatures"][0]["sig"] = _b64_variant(sig, draw)
    keyid = draw(st.sampled_from(["keep", "drop", "empty", "altered", "number"]))
    if keyid == "drop":
        del doc["signatures"][0]["keyid"]
    elif keyid == "empty":
        doc["signatures"][0]["keyid"] = ""
    elif keyid == "altered":
        doc["signatures"][0]["keyid"] = "0" * 64
    elif keyid == "number":
        doc["signatures"][0]["keyid"] = 7
    return json.dumps(doc).encode()


@st.composite
def structural(draw: st.DrawFn, good: bytes) -> bytes:
    doc: Any = json.loads(good)
    action = draw(
        st.sampled_from(
            [
                "delete",
                "replace",
                "extra",
                "wrap",
                "nest",
                "duplicate",
                "extra-signature",
                "signatures",
            ]
        )
    )
    field = draw(st.sampled_from(["payload", "payloadType", "signatures"]))
    if action == "delete":
        del doc[field]
    elif action == "replace":
        doc[field] = draw(JSON_VALUES)
    elif action == "extra":
        doc[draw(st.text(max_size=6))] = draw(JSON_VALUES)
    elif action == "wrap":
        doc = [doc]
    elif action == "nest":
        depth = draw(st.integers(1, 300))
        value: Any = doc[field]
        for _ in range(depth):
            value = [value]
        doc[field] = value
    elif action == "duplicate":  # a second spelling of one key, textually
        text = json.dumps(doc)
        extra = json.dumps({field: draw(JSON_VALUES)})[1:-1]
        text = (
            text[:1] + extra + ", " + text[1:]
            if draw(st.booleans())
            else (text[:-1] + ", " + extra + "}")
        )
        return text.encode()
    elif action == "extra-signature":
        other = draw(st.sampled_from(["copy", "garbage", "other-key"]))
        sigs = doc["signatures"]
        if other == "copy":
            sigs.append(dict(sigs[0]))
        elif other == "garbage":
            sigs.insert(draw(st.integers(0, 1)), {"keyid": "", "sig": "AAAA"})
        else:
            foreign = json.loads(
                sign_envelope(base64.b64decode(doc["payload"]), PAYLOAD_TYPE, OTHER)
            )
            sigs.insert(draw(st.integers(0, 1)), foreign["signatures"][0])
    else:
        doc["signatures"] = draw(st.sampled_from([[], {}, [None], [[]], [{"keyid": "x"}]]))
    return json.dumps(doc).encode()


def _non_canonical(payload: bytes, draw: st.DrawFn) -> bytes:
    """The same statement in another spelling (never the canonical bytes)."""
    value = json.loads(payload)
    form = draw(
        st.sampled_from(
            ["indent", "order", "bom", "encoding", "escape", "number", "space", "ascii", "slash"]
        )
    )
    if form == "indent":
        return json.dumps(
            value, indent=draw(st.sampled_from([0, 1, 2])), ensure_ascii=False
        ).encode()
    if form == "order":
        return (
            json.dumps(value, separators=(",", ":"), ensure_ascii=False, sort_keys=False).encode()
            if list(value) != sorted(value)
            else (
                json.dumps(
                    dict(reversed(list(value.items()))), separators=(",", ":"), ensure_ascii=False
                ).encode()
            )
        )
    if form == "bom":
        return b"\xef\xbb\xbf" + payload
    if form == "encoding":
        return payload.decode().encode(draw(st.sampled_from(["utf-16", "utf-16-le", "utf-32"])))
    if form == "escape":
        return payload.replace(b'"predicate"', b'"\\u0070redicate"', 1)
    if form == "number":
        return (
            payload.replace(b'"durationMs":', b'"durationMs":-0.0e0+', 1).replace(b"+", b"", 1)
            if draw(st.booleans())
            else payload.replace(b'"durationMs":0', b'"durationMs":0.0', 1)
        )
    if form == "space":
        return payload.replace(b",", b", ", 1)
    if form == "ascii":
        return payload.replace(b'"github-actions"', b'"github\\u002dactions"', 1)
    return payload.replace(b"https://in-toto.io/", b"https:\\/\\/in-toto.io\\/", 1)


@st.composite
def resigned_payloads(draw: st.DrawFn, good: bytes) -> bytes:
    """Payloads signed *by the trusted key*: non-canonical spellings, other payloadTypes;
    and edited statements signed by another key."""
    payload = base64.b64decode(json.loads(good)["payload"])
    kind = draw(st.sampled_from(["non-canonical", "payload-type", "other-key", "surrogate"]))
    if kind == "non-canonical":
        return sign_envelope(_non_canonical(payload, draw), PAYLOAD_TYPE, KEY)
    if kind == "payload-type":
        kind_text = draw(
            st.sampled_from(
                [
                    PAYLOAD_TYPE.upper(),
                    PAYLOAD_TYPE + " ",
                    "application/json",
                    "",
                    "application/vnd.in-toto+json\0",
                ]
            )
        )
        return sign_envelope(payload, kind_text, KEY)
    if kind == "surrogate":
        edited = payload.replace(b'"github-actions"', b'"\\udc00github-actions"', 1)
        return sign_envelope(edited, PAYLOAD_TYPE, KEY)
    value = json.loads(payload)
    value["predicate"]["changeloop"]["status"] = draw(st.sampled_from(["pass", "fail"]))
    value["predicate"]["changeloop"]["change"] = draw(st.sampled_from([CHANGE, "other"]))
    return sign_envelope(canonicalize(value), PAYLOAD_TYPE, OTHER)


def mutants(good: bytes) -> st.SearchStrategy[bytes]:
    return st.one_of(
        byte_edits(good),
        reencodings(good),
        base64_forms(good),
        structural(good),
        resigned_payloads(good),
    )


# -- running the real verbs ------------------------------------------------------------
def run_cli(*argv: str) -> tuple[int, dict[str, Any]]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    assert code in (0, 1), (code, err.getvalue())
    assert "Traceback" not in err.getvalue() and "unexpected error" not in err.getvalue()
    return code, json.loads(out.getvalue())


def check_one(data: bytes, s: Setup) -> None:
    same = unchanged(data, s)
    try:
        verified = verify_envelope(data, [KEY.public_key()], s.expect)
    except VerificationError:
        verified = None
    if verified is not None:
        assert same and verified.payload == s.payload, data
    path = s.scratch / "mutant.json"
    path.write_bytes(data)
    code, doc = run_cli("receipt", "verify", str(path), "--public-key", str(s.pub), "--json")
    assert doc["valid"] is (code == 0) and (code == 0) is (verified is not None)
    if code == 1:
        assert doc["errors"] and doc["check"]
    code, doc = run_cli(
        "receipt", "import", str(path), "--change", CHANGE, "--root", str(s.root), "--json"
    )
    assert (code == 0) is (verified is not None), doc
    if code == 1:
        assert doc["imported"] == [] and doc["errors"]
        assert not s.receipts.exists() or not any(s.receipts.iterdir())
    shutil.rmtree(s.receipts, ignore_errors=True)


def test_the_unmutated_envelope_verifies_everywhere(setup: Setup) -> None:
    """The baseline the properties lean on: the original passes verify, import and prove."""
    assert unchanged(setup.good, setup)
    check_one(setup.good, setup)
    setup.receipts.mkdir()
    (setup.receipts / "good.json").write_bytes(setup.good)
    code, doc = run_cli("prove", CHANGE, "--root", str(setup.root), "--json")
    shutil.rmtree(setup.receipts)
    assert code == 0 and doc["claims"]["auth-boundary"]["status"] == "proven", doc


@settings(
    max_examples=250,
    deadline=None,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.function_scoped_fixture,
        HealthCheck.data_too_large,
    ],
)
@given(data=st.data())
def test_mutants_never_crash_verify_or_import_and_never_verify_unless_unchanged(
    setup: Setup, data: st.DataObject
) -> None:
    check_one(data.draw(mutants(setup.good)), setup)


@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.function_scoped_fixture,
        HealthCheck.data_too_large,
    ],
)
@given(data=st.data())
def test_prove_judges_every_mutant_and_passes_only_on_an_unchanged_one(
    setup: Setup, data: st.DataObject
) -> None:
    batch = data.draw(st.lists(mutants(setup.good), min_size=1, max_size=3))
    shutil.rmtree(setup.receipts, ignore_errors=True)
    setup.receipts.mkdir()
    for i, mutant in enumerate(batch):
        (setup.receipts / f"m{i}.json").write_bytes(mutant)
    code, doc = run_cli("prove", CHANGE, "--root", str(setup.root), "--json")
    shutil.rmtree(setup.receipts, ignore_errors=True)
    (review,) = [p for p in doc["providers"] if p["name"] == "review"]
    statuses = {r["status"] for r in review["receipts"]}
    assert statuses <= {"pass", "fail"} and statuses, doc
    text = json.dumps(doc)
    assert "crash" not in text, text
    if "pass" in statuses:
        assert code == 0 and any(unchanged(m, setup) for m in batch)
    else:
        assert code == 1


# -- statements the trusted key signed, with random content ----------------------------
@st.composite
def edited_statements(draw: st.DrawFn, statement_doc: dict[str, Any]) -> bytes:
    """A canonical statement with one field (at any depth) replaced, signed by the
    trusted key: a legitimately signed but odd receipt, which must be judged, not crash."""
    value: Any = json.loads(json.dumps(statement_doc))
    paths: list[list[Any]] = []
    pending: list[tuple[Any, list[Any]]] = [(value, [])]
    while pending:
        node, path = pending.pop()
        items = node.items() if isinstance(node, dict) else enumerate(node)
        for key, child in items:
            paths.append([*path, key])
            if isinstance(child, dict | list):
                pending.append((child, [*path, key]))
    path = draw(st.sampled_from(sorted(paths, key=repr)))
    parent = value
    for key in path[:-1]:
        parent = parent[key]
    if draw(st.integers(0, 4)) == 0 and isinstance(parent, dict):
        del parent[path[-1]]
    else:
        parent[path[-1]] = draw(
            JSON_VALUES | st.text(alphabet=st.characters(codec="utf-8"), max_size=12)
        )
    try:
        payload = canonicalize(value)
    except ValueError:  # no RFC 8785 form (e.g. an integer beyond 2**53): sign it anyway
        payload = json.dumps(value).encode("utf-8", "surrogatepass")
    return sign_envelope(payload, PAYLOAD_TYPE, KEY)


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(data=st.data())
def test_odd_statements_signed_by_the_trusted_key_are_judged_never_a_crash(
    setup: Setup, data: st.DataObject
) -> None:
    envelope = data.draw(edited_statements(setup.statement))
    try:
        verify_envelope(envelope, [KEY.public_key()], setup.expect)
    except VerificationError:
        pass
    path = setup.scratch / "odd.json"
    path.write_bytes(envelope)
    code, doc = run_cli("receipt", "verify", str(path), "--public-key", str(setup.pub), "--json")
    assert doc["valid"] is (code == 0)


@settings(max_examples=100, deadline=None)
@given(payload=st.binary(max_size=300), payload_type=st.text(max_size=40))
def test_a_signed_envelope_reads_back_as_what_was_signed(payload: bytes, payload_type: str) -> None:
    if any(0xD800 <= ord(c) <= 0xDFFF for c in payload_type):  # no UTF-8 form to sign
        return
    envelope = parse_envelope(sign_envelope(payload, payload_type, KEY))
    assert envelope.payload == payload and envelope.payload_type == payload_type
    assert [s.keyid for s in envelope.signatures] == [keyid(KEY.public_key())]
    assert verify_signatures(envelope, [KEY.public_key()]) == (payload, KEY.public_key())

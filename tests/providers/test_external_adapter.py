"""The external adapter: real keys, real git repositories, one reason per refusal."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import anyio
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa, x25519
from receipts_helpers import (
    T0,
    b64,
    commit_all,
    envelope_doc,
    identities,
    make_workspace,
    pem_text,
    reencode,
    run_context,
    signed,
    statement,
    unb64,
    write_files,
)

from changeloop.git.identity import content_identity
from changeloop.model import Plan
from changeloop.outcome import Outcome
from changeloop.plan import build_plan
from changeloop.providers import external
from changeloop.signing.dsse import sign_envelope
from changeloop.signing.jcs import canonicalize
from changeloop.signing.keys import generate_private_key, private_pem, public_pem
from changeloop.workspace import discovery as workspace

KEY = generate_private_key()
NOW = T0 + timedelta(minutes=1)
SPKI = (serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)


def plan_of(root: Path, change: str = "add-review") -> Plan:
    return build_plan(root, workspace.find_change(root, change))


def run_external(root: Path, now=NOW) -> list[Outcome]:  # type: ignore[no-untyped-def]
    plan = plan_of(root)
    return anyio.run(external.run, run_context(plan, "review", now=now))


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    make_workspace(tmp_path, pub_pem=pem_text(KEY))
    return tmp_path


def put(root: Path, data: bytes, name: str = "ci.json") -> None:
    write_files(root / "openspec/changes/add-review/receipts", {name: data})


def good(root: Path, **over: object) -> bytes:
    return signed(statement(subjects=identities(root), **over), KEY)  # type: ignore[arg-type]


def test_valid_receipt_passes_and_credits_the_claims(ws: Path) -> None:
    put(ws, good(ws, url="https://ci.example/run/7"))
    [out] = run_external(ws)
    assert out.status == "pass", out.reason
    assert out.claims == {"auth-boundary": "credited"}
    assert out.issuer == "github-actions" and out.url == "https://ci.example/run/7"
    assert out.details["receipt"]["path"] == "openspec/changes/add-review/receipts/ci.json"


def test_no_envelope_means_no_receipt_and_a_reason(ws: Path) -> None:
    plan = plan_of(ws)
    ctx = run_context(plan, "review", now=NOW)
    assert anyio.run(external.run, ctx) == []
    reason = external.missing_reason(ctx)
    assert reason is not None and "openspec/changes/add-review/receipts" in reason
    put(ws, good(ws))
    assert "is addressed to provider 'review'" in (external.missing_reason(ctx) or "")


def _tamper_payload(root: Path) -> bytes:
    doc = envelope_doc(good(root))
    doc["payload"] = b64(unb64(doc["payload"]).replace(b'"pass"', b'"fail"'))
    return reencode(doc)


def _tamper_type(root: Path) -> bytes:
    doc = envelope_doc(good(root))
    doc["payloadType"] = "application/vnd.in-toto+json; x=1"
    return reencode(doc)


def _keyid(root: Path) -> bytes:
    doc = envelope_doc(good(root))
    doc["signatures"][0]["keyid"] = "0" * 64
    return reencode(doc)


def _zero(root: Path) -> bytes:
    doc = envelope_doc(good(root))
    doc["signatures"] = []
    return reencode(doc)


def _later_commit(root: Path) -> bytes:
    data = good(root)
    write_files(root / "api", {"src/api.txt": "api v2\n"})
    commit_all(root / "api")
    return data


def _dup_keys(root: Path) -> bytes:
    return good(root).replace(b'{"payload"', b'{"payloadType":"x","payload"', 1)


NEGATIVE: list[tuple[str, Callable[[Path], bytes], str]] = [
    ("tampered payload", _tamper_payload, "signature check failed"),
    ("tampered payloadType", _tamper_type, "signature check failed"),
    (
        "another key",
        lambda r: signed(statement(subjects=identities(r)), generate_private_key()),
        "not a trusted key",
    ),
    ("keyid mismatch", _keyid, "keyid was altered"),
    ("another change", lambda r: good(r, change="other-change"), "is for change 'other-change'"),
    ("another content", _later_commit, "was made for content"),
    (
        "another claim",
        lambda r: good(r, claims={"other": "credited"}),
        "does not credit claim(s) auth-boundary",
    ),
    ("another issuer", lambda r: good(r, issuer="gitlab"), "names issuer 'gitlab'"),
    ("future-dated", lambda r: good(r, finished=NOW + timedelta(hours=1)), "in the future"),
    ("duplicate keys", _dup_keys, "twice"),
    ("truncated", lambda r: good(r)[:100], "truncated"),
    ("zero signatures", _zero, "carries no signature"),
]


@pytest.mark.parametrize(("case", "make", "words"), NEGATIVE, ids=[c for c, _, _ in NEGATIVE])
def test_negative_table(ws: Path, case: str, make: Callable[[Path], bytes], words: str) -> None:  # noqa: ARG001 (the case id)
    put(ws, make(ws))
    [out] = run_external(ws)
    assert out.status == "fail"
    assert out.reason is not None and words in out.reason, out.reason
    # Broken envelopes (unparseable, unverifiable) fail closed; verifiable ones fail a check.
    assert out.reason.startswith(
        (
            "no valid receipt for this content — openspec/changes/add-review/receipts/ci.json:",
            "receipt envelope(s) that cannot be parsed or verified fail closed —"
            " openspec/changes/add-review/receipts/ci.json:",
        )
    ), out.reason
    assert out.claims == {}


def test_another_content_names_both_trees(ws: Path) -> None:
    before = identities(ws)["api"]
    put(ws, _later_commit(ws))
    after = identities(ws)["api"]
    [out] = run_external(ws)
    assert out.reason is not None
    assert f"content {before.tree[:7]}… (commit {before.head[:7]}…)" in out.reason  # type: ignore[index]
    assert f"this change's content is {after.tree[:7]}…" in out.reason


def test_too_old_with_max_age(tmp_path: Path) -> None:
    make_workspace(tmp_path, pub_pem=pem_text(KEY))
    ex = tmp_path / "openspec/changes/add-review/execution.yaml"
    ex.write_text(ex.read_text() + "    maxAge: 1d\n")
    put(tmp_path, good(tmp_path))
    [out] = run_external(tmp_path, now=T0 + timedelta(days=3))
    assert out.status == "fail" and "accepts receipts up to maxAge 1 d" in (out.reason or "")


def _rsa() -> str:
    return (
        rsa.generate_private_key(public_exponent=65537, key_size=2048)
        .public_key()
        .public_bytes(*SPKI)
        .decode()
    )


BAD_KEYS: list[tuple[str, Callable[[], str], str]] = [
    ("rsa", _rsa, "RSA public key"),
    (
        "ec",
        lambda: ec.generate_private_key(ec.SECP256R1()).public_key().public_bytes(*SPKI).decode(),
        "EC (ECDSA)",
    ),
    (
        "x25519",
        lambda: x25519.X25519PrivateKey.generate().public_key().public_bytes(*SPKI).decode(),
        "X25519",
    ),
    ("two blocks", lambda: pem_text(KEY) + pem_text(KEY), "2 PEM blocks"),
    ("private as public", lambda: private_pem(KEY).decode(), "private key"),
]


@pytest.mark.parametrize(("case", "pem", "words"), BAD_KEYS, ids=[c for c, _, _ in BAD_KEYS])
def test_configured_key_refusals(
    tmp_path: Path,
    case: str,  # noqa: ARG001 (the case id, for the test's name)
    pem: Callable[[], str],
    words: str,
) -> None:
    make_workspace(tmp_path, pub_pem=pem())
    put(tmp_path, good(tmp_path))
    plan = plan_of(tmp_path)
    problems = external.preflight(plan.providers["review"], plan)
    assert problems and words in problems[0].message
    [out] = run_external(tmp_path)
    assert out.status == "fail" and words in (out.reason or "")


def test_failed_receipt_for_this_content_wins_over_a_passed_one(ws: Path) -> None:
    put(ws, good(ws), "a-pass.json")
    put(ws, good(ws, status="fail", claims={"auth-boundary": "failed"}), "b-fail.json")
    [out] = run_external(ws)
    assert out.status == "fail" and "b-fail.json" in (out.reason or "")
    assert "reviewer said no" in (out.reason or "")
    assert out.claims == {"auth-boundary": "failed"}


def test_one_valid_among_invalid_ones_suffices(ws: Path) -> None:
    put(ws, good(ws, change="other"), "a.json")
    put(ws, good(ws), "b.json")
    [out] = run_external(ws)
    assert out.status == "pass" and out.details["receipt"]["path"].endswith("b.json")


def test_an_envelope_nobody_can_parse_fails_closed_naming_the_file(ws: Path) -> None:
    # docs/design.md: it may be the receipt that says FAILED, so a valid pass beside it is not enough.
    put(ws, good(ws), "b.json")
    put(ws, b"{}", "c.json")
    [out] = run_external(ws)
    assert out.status == "fail" and "receipts/c.json" in (out.reason or "")


def test_a_fifo_among_the_receipts_is_never_waited_on(ws: Path) -> None:
    # Nobody writes to it: opening it to read would block prove forever. It holds
    # no receipt (it is not a file), so the valid envelope beside it decides.
    import os

    put(ws, good(ws), "b.json")
    os.mkfifo(ws / "openspec/changes/add-review/receipts/pipe.json")
    [out] = run_external(ws)
    assert out.status == "pass", out.reason
    assert out.details["receipt"]["path"].endswith("b.json")


def test_external_reads_the_workspace_never_the_sandbox(
    ws: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    put(ws, good(ws))
    elsewhere = tmp_path_factory.mktemp("sandbox")
    plan = plan_of(ws)
    ctx = run_context(plan, "review", now=NOW, workdirs={"web": elsewhere, "api": elsewhere})
    [out] = anyio.run(external.run, ctx)
    assert out.status == "pass"


def test_committing_the_receipt_into_openspec_keeps_it_valid(tmp_path: Path) -> None:
    """A single repository holding openspec/: receipts live inside the proven repo."""
    from receipts_helpers import init_repo

    init_repo(tmp_path, {"src/a.txt": "a\n", "openspec/specs/.keep": ""})
    cdir = tmp_path / "openspec/changes/add-review"
    pub = pem_text(KEY).strip().replace("\n", "\\n")
    write_files(
        cdir,
        {
            "evidence.yaml": "version: 3\nclaims:\n  auth-boundary:\n    statement: s\n    requires: [review]\n",
            "execution.yaml": (
                "version: 1\nproviders:\n  review:\n    adapter: external\n"
                f'    claims: [auth-boundary]\n    ci: {{issuer: github-actions, publicKey: "{pub}\\n"}}\n'
            ),
        },
    )
    commit_all(tmp_path)
    data = signed(
        statement(subjects={"self": content_identity(tmp_path, include_untracked=True)}), KEY
    )
    put(tmp_path, data)
    commit_all(tmp_path, "add the CI receipt")
    [out] = anyio.run(external.run, run_context(plan_of(tmp_path), "review", now=NOW))
    assert out.status == "pass", out.reason
    write_files(tmp_path, {"src/a.txt": "b\n"})
    [out] = anyio.run(external.run, run_context(plan_of(tmp_path), "review", now=NOW))
    assert out.status == "fail" and "was made for content" in (out.reason or "")


def test_wrong_payload_type_signed_by_the_trusted_key(ws: Path) -> None:
    payload = canonicalize(statement(subjects=identities(ws)))
    put(ws, sign_envelope(payload, "application/json", KEY))
    [out] = run_external(ws)
    assert "payloadType check failed" in (out.reason or "")


def test_fingerprint_and_resources(ws: Path) -> None:
    plan = plan_of(ws)
    provider = plan.providers["review"]
    assert external.repositories(provider, plan) == ("api", "web")
    assert provider.resources == ("workspace-read:api", "workspace-read:web")
    assert external.effective_command(provider) is None and external.RUNS_COMMAND is False
    inputs = external.fingerprint_inputs(provider)
    assert inputs["claims"] == ["auth-boundary"]
    json.dumps(inputs)
    assert public_pem(KEY.public_key()).decode().strip() in json.dumps(inputs).replace("\\n", "\n")

"""`changeloop summary`: a DSSE-signed SLSA VSA over the change, checked by independent tools."""

from __future__ import annotations

import base64
import hashlib
import json
from pathlib import Path
from typing import Any

import in_toto_attestation.v1.statement_pb2 as spb
import pytest
from gate_helpers import prove, run, workspace
from google.protobuf import json_format
from in_toto_attestation.predicates.vsa.v1 import vsa_pb2
from in_toto_attestation.v1 import resource_descriptor_pb2 as rd_pb2
from in_toto_attestation.v1.statement import Statement
from securesystemslib.dsse import Envelope as SslEnvelope
from securesystemslib.signer import SSlibKey

from changeloop import __version__
from changeloop.git.identity import content_identity
from changeloop.signing.keys import keyid, load_public_key_file


def _keys(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[Path, Path]:
    assert run(["keygen", "--out", str(tmp_path / "k")], capsys)[0] == 0
    return tmp_path / "k" / "changeloop.key", tmp_path / "k" / "changeloop.pub"


def _statement(path: Path) -> dict[str, Any]:
    out: dict[str, Any] = json.loads(base64.b64decode(json.loads(path.read_text())["payload"]))
    return out


def _summary(root: Path, key: Path, out: Path, capsys: pytest.CaptureFixture[str]) -> int:
    return run(
        ["summary", "c1", "--root", str(root), "--sign-key", str(key), "--out", str(out)], capsys
    )[0]


def test_passed_vsa_has_the_fixed_shape(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = workspace(tmp_path)
    key, pub = _keys(tmp_path, capsys)
    assert prove(root, capsys) == 0
    out = tmp_path / "vsa.json"
    assert _summary(root, key, out, capsys) == 0
    st = _statement(out)
    assert st["_type"] == "https://in-toto.io/Statement/v1"
    assert st["predicateType"] == "https://slsa.dev/verification_summary/v1"
    tree = content_identity(root, include_untracked=True).tree
    assert st["subject"] == [{"name": "self", "digest": {"gitTree": tree}}]
    p = st["predicate"]
    assert p["verifier"] == {"id": f"pkg:pypi/changeloop@{__version__}"}
    # No remote: the repository is named by its file URL, then the change's path in it.
    assert p["resourceUri"] == f"git+{root.resolve().as_uri()}#openspec/changes/c1"
    change = root / "openspec" / "changes" / "c1"
    digests = {
        f"openspec/changes/c1/{name}": {
            "sha256": hashlib.sha256((change / name).read_bytes()).hexdigest()
        }
        for name in ("evidence.yaml", "execution.yaml")
    }
    assert p["policy"]["uri"] == "openspec/changes/c1/evidence.yaml"
    assert p["policy"]["digest"] == digests["openspec/changes/c1/evidence.yaml"]
    assert p["policy"]["annotations"]["files"] == digests
    trust = p["policy"]["annotations"]["trust"]
    # with this checkout's trust the signing key's public half vouches (docs/verbs/summary.md)
    signer = keyid(load_public_key_file(pub))
    assert trust["source"] == "checkout" and trust["keys"] == [signer]
    receipts = sorted((root / ".changeloop" / "receipts" / "c1").glob("*.json"))
    assert p["inputAttestations"] == [
        {
            "uri": f".changeloop/receipts/c1/{r.name}",
            "digest": {"sha256": hashlib.sha256(r.read_bytes()).hexdigest()},
        }
        for r in receipts
    ]
    assert len(receipts) == 2
    assert p["changeloop"] == {"schema": "changeloop/vsa@1", "change": "c1", "setAside": []}
    assert p["verificationResult"] == "PASSED" and p["verifiedLevels"] == []
    assert p["timeVerified"].endswith("Z")
    # Independent readers: in-toto's Statement and SLSA's VSA v1 protobuf (unknown fields refused).
    Statement.copy_from_pb(json_format.ParseDict(st, spb.Statement())).validate()
    # (The pinned proto declares verifiedLevels a single string, against the SLSA v1 spec's
    # array; every other field is checked by it, verifiedLevels by the assertion above. The
    # `changeloop` extension is ours: SLSA's parsing rules have readers ignore it. The spec
    # makes `policy` a ResourceDescriptor, whose `annotations` the pinned proto's narrower
    # Policy lacks: the policy is checked whole as a ResourceDescriptor.)
    rest = {k: v for k, v in p.items() if k not in ("verifiedLevels", "changeloop")}
    rest["policy"] = {k: p["policy"][k] for k in ("uri", "digest")}
    json_format.ParseDict(rest, vsa_pb2.VerificationSummary(), ignore_unknown_fields=False)
    json_format.ParseDict(p["policy"], rd_pb2.ResourceDescriptor(), ignore_unknown_fields=False)
    # Independent signature check: securesystemslib.
    public = load_public_key_file(pub)
    env = SslEnvelope.from_dict(json.loads(out.read_text()))
    ssl_key = SSlibKey.from_crypto(public, keyid=keyid(public))
    assert list(env.verify([ssl_key], 1)) == [keyid(public)]
    assert json.loads(env.payload) == st


def test_failed_vsa_is_written_and_exits_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = workspace(tmp_path)
    key, _pub = _keys(tmp_path, capsys)
    out = tmp_path / "vsa.json"
    assert _summary(root, key, out, capsys) == 1  # nothing proven yet
    st = _statement(out)
    assert st["predicate"]["verificationResult"] == "FAILED"
    assert st["predicate"]["verifiedLevels"] == ["FAILED"]  # as SLSA VSA v1 says a failure
    assert st["predicate"]["inputAttestations"] == []
    assert prove(root, capsys) == 0
    (root / "check.sh").write_text("exit 0 # edited after the proof\n")
    assert _summary(root, key, out, capsys) == 1
    st = _statement(out)
    assert st["predicate"]["verificationResult"] == "FAILED"
    # Stale receipts were read and not weighed: they are set aside, each with gate's reason.
    assert st["predicate"]["inputAttestations"] == []
    aside = st["predicate"]["changeloop"]["setAside"]
    assert [a["code"] for a in aside] == ["stale-content", "stale-content"]
    assert all(a["uri"].startswith(".changeloop/receipts/c1/") for a in aside)


def test_receipt_verify_checks_a_vsa(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = workspace(tmp_path)
    key, pub = _keys(tmp_path, capsys)
    assert prove(root, capsys) == 0
    out = tmp_path / "vsa.json"
    assert _summary(root, key, out, capsys) == 0
    code, doc, err = run(
        ["receipt", "verify", str(out), "--public-key", str(pub), "--json"], capsys
    )
    assert code == 0, err
    assert doc is not None and doc["valid"] is True
    assert doc["verificationResult"] == "PASSED" and doc["change"] == "c1"
    assert doc["predicateType"] == "https://slsa.dev/verification_summary/v1"
    assert "PASSED" in err
    assert (
        run(["receipt", "verify", str(out), "--public-key", str(pub), "--change", "other"], capsys)[
            0
        ]
        == 1
    )
    # Another key: invalid.
    assert run(["keygen", "--out", str(tmp_path / "o")], capsys)[0] == 0
    code, doc, _ = run(
        [
            "receipt",
            "verify",
            str(out),
            "--public-key",
            str(tmp_path / "o" / "changeloop.pub"),
            "--json",
        ],
        capsys,
    )
    assert code == 1 and doc is not None and doc["check"] == "signature"


def test_receipt_verify_refuses_a_tampered_or_misshapen_vsa(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from changeloop.signing.dsse import sign_envelope
    from changeloop.signing.jcs import canonicalize
    from changeloop.signing.keys import load_private_key

    root = workspace(tmp_path)
    key, pub = _keys(tmp_path, capsys)
    out = tmp_path / "vsa.json"
    _summary(root, key, out, capsys)
    env = json.loads(out.read_text())
    st = _statement(out)
    st["predicate"]["verificationResult"] = "PASSED"  # flip FAILED to PASSED, keep the signature
    env["payload"] = base64.b64encode(canonicalize(st)).decode()
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(env))
    code, doc, _ = run(["receipt", "verify", str(bad), "--public-key", str(pub), "--json"], capsys)
    assert code == 1 and doc is not None and doc["check"] == "signature"
    # Properly signed but not the fixed shape (a level claimed): refused on shape.
    st["predicate"]["verifiedLevels"] = ["SLSA_BUILD_LEVEL_3"]
    bad.write_bytes(
        sign_envelope(canonicalize(st), "application/vnd.in-toto+json", load_private_key(key))
    )
    code, doc, _ = run(["receipt", "verify", str(bad), "--public-key", str(pub), "--json"], capsys)
    assert code == 1 and doc is not None and doc["check"] == "statement"
    assert "verifiedLevels" in doc["reason"]


def test_summary_refusals(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = workspace(tmp_path)
    key, _pub = _keys(tmp_path, capsys)
    code, doc, _ = run(
        ["summary", "nope", "--root", str(root), "--sign-key", str(key), "--json"], capsys
    )
    assert code == 2 and doc is not None and doc["errors"]
    code, _doc, err = run(
        ["summary", "c1", "--root", str(root), "--sign-key", str(tmp_path / "missing.key")], capsys
    )
    assert code == 2 and "missing.key" in err


def test_hostile_envelopes_are_refused_not_crashed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The VSA path (dispatch and verification) and gate refuse; they never crash.
    (The receipt path's own hardening belongs to `receipt verify`'s receipt checks.)"""
    import pytest

    from changeloop.gate.vsa import claims_to_be_vsa, verify_vsa
    from changeloop.signing.dsse import VerificationError

    _key, pub = _keys(tmp_path, capsys)
    deep = b"[" * 100000 + b"]" * 100000
    big = b'{"payload": "' + b"A" * (5 * 1024 * 1024) + b'"}'
    public = load_public_key_file(pub)
    for data in (deep, big):
        assert claims_to_be_vsa(data) is False
        with pytest.raises(VerificationError):
            verify_vsa(data, [public])
    root = workspace(tmp_path)
    assert prove(root, capsys) == 0
    (root / ".changeloop" / "receipts" / "c1" / "deep.json").write_bytes(deep)
    code, doc, err = run(["gate", "c1", "--root", str(root), "--json"], capsys)
    assert code == 1 and doc is not None, err
    assert [r["code"] for r in doc["reasons"]] == ["unverified"]


def test_a_line_break_in_a_signed_verifier_id_cannot_forge_a_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The human answer quotes signed strings: a newline in one stays escaped on its line."""
    from changeloop.signing.dsse import sign_envelope
    from changeloop.signing.jcs import canonicalize
    from changeloop.signing.keys import load_private_key

    root = workspace(tmp_path)
    key, pub = _keys(tmp_path, capsys)
    assert prove(root, capsys) == 0
    out = tmp_path / "vsa.json"
    assert _summary(root, key, out, capsys) == 0
    st = _statement(out)
    st["predicate"]["verifier"]["id"] += "\nvalid: forged — every change PASSED"
    signed = tmp_path / "signed.json"
    signed.write_bytes(
        sign_envelope(canonicalize(st), "application/vnd.in-toto+json", load_private_key(key))
    )
    code, _doc, err = run(["receipt", "verify", str(signed), "--public-key", str(pub)], capsys)
    assert code == 0, err
    assert not any(line.startswith("valid: forged") for line in err.splitlines())
    assert "\\nvalid: forged" in err


def test_summary_ends_with_next_steps_on_stderr_only(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Passed: how to check it offline (the step given passes); failed: prove again."""
    root = workspace(tmp_path)
    key, pub = _keys(tmp_path, capsys)
    out = tmp_path / "vsa.json"
    argv = ["summary", "c1", "--root", str(root), "--sign-key", str(key)]
    code, _doc, err = run([*argv, "--out", str(out)], capsys)
    assert code == 1  # nothing proven yet
    assert "Next steps:" in err and "changeloop prove c1" in err
    assert prove(root, capsys) == 0
    code, envelope, err = run(argv, capsys)
    assert code == 0
    assert envelope is not None and "payload" in envelope  # stdout: the envelope alone
    assert "Next steps:" in err and f"--public-key {pub}" in err
    code, _doc, err = run([*argv, "--out", str(out)], capsys)
    step = f"receipt verify {out} --public-key {pub} --change c1"
    assert code == 0 and step in err
    assert run(step.split(), capsys)[0] == 0  # the step it gives is one that passes

"""A pull request cannot choose the keys that judge it: trust comes from the base revision.

The attack, end to end with real git, real keys (``changeloop keygen``) and the real
CLI: a pull request breaks ``add``, replaces the ``ci.pub`` its change's ``external``
provider trusts with its author's key, and commits a sign-off signed with that key
(``receipt sign`` + ``receipt import``). Judged with the checkout's own trust material
it passes; every verb given ``--trust-from main`` reads the trust material of ``main``
instead, says ``trust-changed`` naming the provider and the field, and is not proven.
"""

from __future__ import annotations

import base64
import hashlib
import json
import time
from pathlib import Path
from typing import Any

import pytest
from anchor_helpers import (
    CHANGE,
    Scenario,
    base_and_pull_request,
    cli,
    execution,
    keygen,
    sign_off,
)
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
from repo_helpers import git

from changeloop.signing.keys import keyid, load_public_key_file


def _changed(doc: dict[str, Any]) -> list[dict[str, Any]]:
    changed: list[dict[str, Any]] = doc["trust"]["changed"]
    return changed


def _names_the_swapped_key(doc: dict[str, Any]) -> None:
    found = [c for c in _changed(doc) if c["provider"] == "ci-test"]
    assert any(c["field"] == "ci.publicKey" for c in found), _changed(doc)
    assert all(c["kind"] == "trust-changed" for c in _changed(doc))


def _trusts_main(doc: dict[str, Any], s: Scenario) -> None:
    trust = doc["trust"]
    assert trust["source"] == "rev"
    assert trust["rev"] == "main" and trust["commit"] == s.main_commit
    assert trust["keys"] == [keyid(load_public_key_file(s.ci.pub))]


@pytest.fixture
def attack(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Scenario:
    return base_and_pull_request(tmp_path, capsys)


def test_the_attack_passes_when_the_checkout_chooses_its_keys(
    attack: Scenario, capsys: pytest.CaptureFixture[str]
) -> None:
    """Why the merge check must anchor its trust: judged by its own keys, the PR passes."""
    code, doc, err = cli(capsys, "gate", CHANGE, "--root", str(attack.clone))
    assert code == 0 and doc["status"] == "proven", (doc, err)
    assert doc["trust"]["source"] == "checkout" and doc["trust"]["changed"] == []
    assert "trust: this checkout" in err


def test_gate_trusting_the_base_is_not_proven_and_says_trust_changed(
    attack: Scenario, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["gate", CHANGE, "--root", str(attack.clone), "--trust-from", "main"]
    code, doc, err = cli(capsys, *argv)
    assert code == 1 and doc["status"] == "not-proven", (doc, err)
    _trusts_main(doc, attack)
    _names_the_swapped_key(doc)
    # The same, in the finding shape every verb shares (schemas/finding.json).
    assert [(f["kind"], f["message"]) for f in doc["findings"]] == [
        (c["kind"], c["message"]) for c in _changed(doc)
    ]
    assert doc["findings"][0]["file"] == f"openspec/changes/{CHANGE}/execution.yaml"
    reasons = doc["claims"]["greeting"]["reasons"]
    assert any(r["code"] == "unverified" and "signature" in r["message"] for r in reasons)
    assert f"trust: REV {attack.main_commit}" in err
    assert "trust-changed" in err and "ci-test" in err and "ci.publicKey" in err


def test_summary_trusting_the_base_signs_a_failed_vsa(
    attack: Scenario, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    signer = keygen(tmp_path / "summary-keys", capsys)
    out = tmp_path / "vsa.json"
    argv = ["summary", CHANGE, "--root", str(attack.clone), "--trust-from", "main"]
    code, doc, err = cli(capsys, *argv, "--sign-key", str(signer.key), "--out", str(out))
    assert code == 1 and doc["verificationResult"] == "FAILED", (doc, err)
    _trusts_main(doc, attack)
    _names_the_swapped_key(doc)
    predicate = json.loads(base64.b64decode(json.loads(out.read_bytes())["payload"]))["predicate"]
    assert predicate["verificationResult"] == "FAILED"
    assert predicate["verifiedLevels"] == ["FAILED"]
    policy = predicate["policy"]
    files = policy["annotations"]["files"]
    for name in ("evidence.yaml", "execution.yaml"):
        digest = hashlib.sha256((attack.change_dir / name).read_bytes()).hexdigest()
        assert files[f"openspec/changes/{CHANGE}/{name}"] == {"sha256": digest}
    trust = policy["annotations"]["trust"]
    assert trust["source"] == "rev" and trust["commit"] == attack.main_commit
    assert trust["keys"] == [keyid(load_public_key_file(attack.ci.pub))]
    # The author's sign-off did not verify: it was set aside, not weighed.
    assert predicate["inputAttestations"] == []
    aside = predicate["changeloop"]["setAside"]
    assert [a["code"] for a in aside] == ["unverified"]
    assert aside[0]["uri"].startswith(f"openspec/changes/{CHANGE}/receipts/")
    code, verified, err = cli(
        capsys, "receipt", "verify", str(out), "--public-key", str(signer.pub)
    )
    assert code == 0 and verified["verificationResult"] == "FAILED", (verified, err)


def test_report_trusting_the_base_says_not_proven(
    attack: Scenario, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["report", CHANGE, "--root", str(attack.clone), "--trust-from", "main"]
    code, doc, err = cli(capsys, *argv)
    assert code == 0 and doc["status"] == "not-proven", (doc, err)
    _trusts_main(doc, attack)
    _names_the_swapped_key(doc)
    assert "NOT PROVEN" in err and f"trust: REV {attack.main_commit}" in err
    page = (attack.clone / doc["path"]).read_text()
    assert attack.main_commit in page


def test_prove_trusting_the_base_fails_the_external_provider(
    attack: Scenario, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["prove", CHANGE, "--root", str(attack.clone), "--trust-from", "main"]
    code, doc, err = cli(capsys, *argv)
    assert code == 1 and doc["status"] == "not-proven", (doc, err)
    _trusts_main(doc, attack)
    _names_the_swapped_key(doc)
    assert doc["claims"]["greeting"]["status"] == "failed"
    assert f"trust: REV {attack.main_commit}" in err


def test_receipt_import_trusting_the_base_refuses_the_authors_sign_off(
    attack: Scenario, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    forged = sign_off(attack.clone, attack.author.key, tmp_path / "again.json", capsys)
    before = sorted((attack.change_dir / "receipts").iterdir())
    argv = ["receipt", "import", str(forged), "--change", CHANGE, "--root", str(attack.clone)]
    code, doc, err = cli(capsys, *argv, "--trust-from", "main")
    assert code == 1, (doc, err)
    assert sorted((attack.change_dir / "receipts").iterdir()) == before
    _trusts_main(doc, attack)
    assert "signature" in err


def test_an_honest_pull_request_is_proven_against_the_base(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    honest = base_and_pull_request(tmp_path, capsys, hostile=False)
    argv = ["gate", CHANGE, "--root", str(honest.clone), "--trust-from", "main"]
    code, doc, err = cli(capsys, *argv)
    assert code == 0 and doc["status"] == "proven", (doc, err)
    _trusts_main(doc, honest)
    assert doc["trust"]["changed"] == [] and "trust-changed" not in err


def test_a_change_absent_at_the_base_trusts_only_keys_on_the_command_line(
    attack: Scenario, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A brand-new change brings no trust of its own: only what CI names counts."""
    new = attack.clone / "openspec" / "changes" / "c2"
    new.mkdir()
    for name in ("evidence.yaml", "execution.yaml", "ci.pub"):
        (new / name).write_bytes((attack.change_dir / name).read_bytes())
    git(attack.clone, "add", "-A")
    git(attack.clone, "commit", "-qm", "a new change")
    argv = ["receipt", "sign", "--root", str(attack.clone), "--change", "c2"]
    argv += ["--claims", "greeting", "--capability", "ci-test", "--issuer", "github-actions"]
    for key, name in ((attack.author.key, "author.json"), (attack.ci.key, "ci.json")):
        code, doc, err = cli(capsys, *argv, "--key", str(key), "--out", str(tmp_path / name))
        assert code == 0, (doc, err)
    code, doc, err = cli(
        capsys,
        "receipt",
        "import",
        str(tmp_path / "author.json"),
        "--change",
        "c2",
        "--root",
        str(attack.clone),
    )
    assert code == 0, (doc, err)
    gate = ["gate", "c2", "--root", str(attack.clone), "--trust-from", "main"]
    code, doc, err = cli(capsys, *gate)
    assert code == 1 and doc["trust"]["keys"] == [], (doc, err)
    assert [c["field"] for c in doc["trust"]["changed"]] == ["provider"]
    # CI names its key on the command line: that, and only that, vouches.
    code, doc, err = cli(
        capsys,
        "receipt",
        "import",
        str(tmp_path / "ci.json"),
        "--change",
        "c2",
        "--root",
        str(attack.clone),
        "--trust-from",
        "main",
        "--public-key",
        str(attack.ci.pub),
    )
    assert code == 0, (doc, err)
    authors = (tmp_path / "author.json").read_bytes()
    for path in (attack.clone / "openspec/changes/c2/receipts").iterdir():
        if path.read_bytes() == authors:
            path.unlink()  # it does not verify with CI's key: it would fail the gate closed
    code, doc, err = cli(capsys, *gate, "--public-key", str(attack.ci.pub))
    assert code == 0 and doc["status"] == "proven", (doc, err)
    assert doc["trust"]["keys"] == [keyid(load_public_key_file(attack.ci.pub))]


def test_an_unknown_base_revision_is_refused(
    attack: Scenario, capsys: pytest.CaptureFixture[str]
) -> None:
    for rev in ("no-such-branch", "--output=/tmp/x", "main:app.py"):
        argv = ["gate", CHANGE, "--root", str(attack.clone), f"--trust-from={rev}"]
        code, doc, err = cli(capsys, *argv)
        assert code == 2, (doc, err)
        assert doc["errors"][0]["code"] == "trust_from_unknown", doc
        assert "Traceback" not in err


def test_a_keyring_vouches_and_is_named(
    attack: Scenario, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """CI's keyring (issuer -> keys) replaces the checkout's keys and is named by its digest."""
    ring = tmp_path / "keyring.json"
    ring.write_text(json.dumps({"version": 1, "issuers": {"github-actions": [str(attack.ci.pub)]}}))
    argv = ["gate", CHANGE, "--root", str(attack.clone), "--trust-keyring", str(ring)]
    code, doc, err = cli(capsys, *argv)
    assert code == 1 and doc["status"] == "not-proven", (doc, err)
    digest = hashlib.sha256(ring.read_bytes()).hexdigest()
    assert doc["trust"]["source"] == "keyring" and doc["trust"]["sha256"] == digest
    assert doc["trust"]["keys"] == [keyid(load_public_key_file(attack.ci.pub))]
    assert f"trust: keyring {digest}" in err


def test_every_verb_names_the_same_trust(
    attack: Scenario, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    signer = keygen(tmp_path / "summary-keys", capsys)
    root = ["--root", str(attack.clone), "--trust-from", "main"]
    docs = [
        cli(capsys, "gate", CHANGE, *root)[1],
        cli(capsys, "report", CHANGE, *root)[1],
        cli(capsys, "summary", CHANGE, *root, "--sign-key", str(signer.key))[1],
        cli(capsys, "prove", CHANGE, *root)[1],
    ]
    trusts = [d["trust"] for d in docs]
    assert all(t == trusts[0] for t in trusts), trusts


def _forge_pass(envelope: Path, key: Path) -> None:
    """The author turns their own failing `test` receipt into a pass, signed with their key."""
    from changeloop.signing.dsse import PAYLOAD_TYPE, sign_envelope
    from changeloop.signing.jcs import canonicalize
    from changeloop.signing.keys import load_private_key

    statement = json.loads(base64.b64decode(json.loads(envelope.read_bytes())["payload"]))
    statement["predicate"]["result"] = "PASSED"
    ext = statement["predicate"]["changeloop"]
    ext.update(status="pass", exitCode=0, claims=dict.fromkeys(ext["claims"], "credited"))
    ext.pop("reason", None)
    ext["findings"] = []
    envelope.write_bytes(
        sign_envelope(canonicalize(statement), PAYLOAD_TYPE, load_private_key(key))
    )


def test_the_shared_cache_trusts_the_base_key_only(
    attack: Scenario, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The author publishes a forged pass for `test`, signed with the key their change names:
    reused as is on the checkout's trust, run (and failed) on main's."""
    shared = tmp_path / "shared"
    argv = ["prove", CHANGE, "--root", str(attack.clone), "--sign-key", str(attack.author.key)]
    _code, doc, err = cli(capsys, *argv, "--issuer", "github-actions", "--publish", str(shared))
    [ran] = [p for p in doc["providers"] if p["name"] == "test"]
    assert ran["receipts"][0]["status"] == "fail", (doc, err)  # the pull request's own test
    [published] = shared.glob("*/test.json")
    _forge_pass(published, attack.author.key)

    def test_entry(name: str, *extra: str) -> dict[str, Any]:
        """`test` as `prove --cache-from` in a fresh clone of the pull request sees it."""
        dev = tmp_path / name
        git(tmp_path, "clone", "-q", "--branch", "pr", str(attack.origin), str(dev))
        git(dev, "branch", "-q", "main", "origin/main")
        argv = ["prove", CHANGE, "--root", str(dev), "--cache-from", str(shared), *extra]
        _code, doc, err = cli(capsys, *argv)
        found: dict[str, Any] = next(p for p in doc["providers"] if p["name"] == "test")
        return {**found, "stderr": err}

    forged = test_entry("dev")
    assert forged["state"] == "cached" and forged["origin"] == "shared", forged  # nothing ran
    assert forged["receipts"][0]["status"] == "pass"
    anchored = test_entry("dev-2", "--trust-from", "main")
    assert anchored["state"] == "ran" and anchored["receipts"][0]["status"] == "fail", anchored
    assert "shared cache: ignored" in anchored["stderr"]


def test_a_pull_request_that_loosens_accepts_and_max_age_is_judged_by_the_base(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """CI's own sign-off, but the pull request drops `maxAge` and widens `accepts`: with
    the base's trust the sign-off expires (as `prove` says), and both fields are named."""
    loosened = execution().replace("accepts: [test]", "accepts: [test, lint]")
    s = base_and_pull_request(
        tmp_path, capsys, hostile=False, main_wiring=execution(max_age="2"), pr_wiring=loosened
    )
    time.sleep(3)
    plain = ["gate", CHANGE, "--root", str(s.clone)]
    code, doc, err = cli(capsys, *plain)
    assert code == 0, (doc, err)  # on its own wiring the old sign-off never expires
    code, doc, err = cli(capsys, *plain, "--trust-from", "main")
    assert code == 1 and doc["claims"]["greeting"]["status"] == "failed", (doc, err)
    assert sorted(c["field"] for c in doc["trust"]["changed"]) == ["accepts", "maxAge"]
    [reason] = doc["claims"]["greeting"]["reasons"]
    assert reason["code"] == "failed" and "maxAge" in reason["message"], reason
    assert doc["trust"]["providers"]["ci-test"]["maxAge"] == 2
    assert doc["trust"]["providers"]["ci-test"]["accepts"] == ["test"]


def test_a_re_prove_with_a_trust_of_its_own_is_never_answered_from_the_record(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The no-change record holds an answer judged with the checkout's trust: a prove with
    `--trust-from` runs in full, and leaves no record a plain re-prove could replay."""
    from gate_helpers import workspace

    from changeloop.nochange.key import record_path

    root = workspace(tmp_path)
    plain = ["prove", "c1", "--root", str(root)]
    record = record_path(root / ".changeloop", "c1")
    assert record is not None

    def decision(doc: dict[str, Any]) -> str | None:
        run = root / ".changeloop" / "runs" / doc["runId"] / "run.json"
        found: str | None = json.loads(run.read_text()).get("decision")
        return found

    assert cli(capsys, *plain)[0] == 0
    code, doc, _ = cli(capsys, *plain)
    assert code == 0 and decision(doc) == "no-change" and record.is_file()
    code, doc, err = cli(capsys, *plain, "--trust-from", "HEAD")
    assert code == 0 and decision(doc) is None, (doc, err)
    assert doc["trust"]["source"] == "rev"
    assert not record.exists()
    pem = tmp_path / "ci.pub"
    pem.write_bytes(
        Ed25519PrivateKey.generate()
        .public_key()
        .public_bytes(Encoding.PEM, PublicFormat.SubjectPublicKeyInfo)
    )
    ring = tmp_path / "keyring.json"
    ring.write_text(json.dumps({"version": 1, "issuers": {"ci": [str(pem)]}}))
    for own in (["--trust-keyring", str(ring)],):
        assert cli(capsys, *plain)[0] == 0
        assert decision(cli(capsys, *plain)[1]) == "no-change"
        code, doc, err = cli(capsys, *plain, *own)
        assert code in (0, 1) and decision(doc) is None, (own, doc, err)

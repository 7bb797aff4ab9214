"""`changeloop gate`: re-verify existing receipts against current content and wiring; run nothing."""

from __future__ import annotations

import base64
import json
import subprocess
from pathlib import Path

import pytest
from gate_helpers import codes, gate, prove, run, workspace
from prove_helpers import git


def test_fresh_proof_passes_the_gate_with_the_fixed_shape(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = workspace(tmp_path)
    assert prove(root, capsys) == 0
    code, doc = gate(root, capsys)
    assert code == 0
    assert doc["version"] == "1" and doc["change"] == "c1" and doc["status"] == "proven"
    assert doc["claims"] == {"greeting": {"status": "proven", "reasons": []}}


def test_gate_runs_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = workspace(tmp_path, "echo ran >> ran.log\nexit 0\n")
    (root / ".gitignore").write_text(".changeloop/\nran.log\n")
    git(root, "commit", "-qam", "ignore log")
    assert prove(root, capsys) == 0
    before = (root / "ran.log").read_text()
    runs = sorted((root / ".changeloop" / "runs").iterdir())
    assert gate(root, capsys)[0] == 0
    assert (root / "ran.log").read_text() == before
    assert sorted((root / ".changeloop" / "runs").iterdir()) == runs


def test_no_receipt_at_all(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = workspace(tmp_path)
    code, doc = gate(root, capsys)
    assert code == 1 and doc["status"] == "not-proven"
    assert codes(doc) == ["no-receipt"]
    assert doc["claims"]["greeting"]["status"] == "unproven"


def test_edited_content_is_stale(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = workspace(tmp_path)
    assert prove(root, capsys) == 0
    (root / "check.sh").write_text("exit 0 # edited\n")
    code, doc = gate(root, capsys)
    assert code == 1 and doc["status"] == "not-proven"
    assert codes(doc) == ["stale-content"]
    assert "prove again" in doc["claims"]["greeting"]["reasons"][0]["message"]
    (root / "check.sh").write_text("exit 0\n")  # back to the proven content
    assert gate(root, capsys)[0] == 0


def test_openspec_edits_do_not_stale_content(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = workspace(tmp_path)
    assert prove(root, capsys) == 0
    (root / "openspec" / "changes" / "c1" / "proposal.md").write_text("# why\n")
    assert gate(root, capsys)[0] == 0


def test_each_receipt_is_checked_in_its_own_sandbox_mode(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = workspace(tmp_path)
    assert prove(root, capsys, "--sandbox", "worktree") == 0
    (root / "scratch.txt").write_text("untracked\n")
    assert gate(root, capsys)[0] == 0  # worktree mode: tracked files only
    assert prove(root, capsys, "--sandbox", "copy") == 0
    assert gate(root, capsys)[0] == 0
    (root / "scratch.txt").write_text("untracked, edited\n")
    code, doc = gate(root, capsys)  # copy mode saw the untracked file
    assert code == 1 and codes(doc) == ["stale-content"]


def test_failed_receipt_fails_the_gate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = workspace(tmp_path, "exit 3\n")
    assert prove(root, capsys) == 1
    code, doc = gate(root, capsys)
    assert code == 1
    assert doc["claims"]["greeting"]["status"] == "failed"
    assert codes(doc) == ["failed"]
    assert any(r["code"] == "failed" for r in doc["reasons"])  # requires static-analysis


def test_tampered_local_receipt_is_unverified(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = workspace(tmp_path)
    assert prove(root, capsys) == 0
    path = root / ".changeloop" / "receipts" / "c1" / "check.check.json"
    env = json.loads(path.read_text())
    statement = json.loads(base64.b64decode(env["payload"]))
    statement["predicate"]["changeloop"]["claims"] = {"greeting": "credited", "more": "credited"}
    env["payload"] = base64.b64encode(json.dumps(statement).encode()).decode()
    path.write_text(json.dumps(env))
    code, doc = gate(root, capsys)
    assert code == 1 and doc["status"] == "not-proven"
    assert codes(doc) == ["unverified"]
    assert "signature" in doc["claims"]["greeting"]["reasons"][0]["message"]


def test_unverifiable_stray_envelope_fails_closed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = workspace(tmp_path)
    assert prove(root, capsys) == 0
    (root / ".changeloop" / "receipts" / "c1" / "planted.json").write_text("{not json")
    code, doc = gate(root, capsys)
    assert code == 1 and doc["status"] == "not-proven"
    assert [r["code"] for r in doc["reasons"]] == ["unverified"]
    # The claim it might have spoken for is not called proven beside it.
    assert doc["claims"]["greeting"]["status"] == "inconclusive"
    assert codes(doc) == ["unverified"]


def test_receipts_signed_with_another_key_need_public_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = workspace(tmp_path)
    assert run(["keygen", "--out", str(tmp_path / "k")], capsys)[0] == 0
    assert prove(root, capsys, "--sign-key", str(tmp_path / "k" / "changeloop.key")) == 0
    code, doc = gate(root, capsys)
    assert code == 1 and codes(doc) == ["unverified"]
    assert gate(root, capsys, "--public-key", str(tmp_path / "k" / "changeloop.pub"))[0] == 0


def _reviewed_by_ci(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> tuple[Path, Path, list[str]]:
    """Change c1 whose one claim an external provider takes from a CI key (made here).

    Returns the workspace, the change's directory and the `receipt sign` argv (no --out).
    """
    root = workspace(tmp_path)
    assert run(["keygen", "--out", str(tmp_path / "k")], capsys)[0] == 0
    pem = (tmp_path / "k" / "changeloop.pub").read_text()
    change = root / "openspec" / "changes" / "c1"
    (change / "evidence.yaml").write_text("version: 3\nclaims:\n  reviewed: {requires: [review]}\n")
    (change / "execution.yaml").write_text(
        "version: 1\nproviders:\n  review:\n    adapter: external\n    claims: [reviewed]\n"
        "    ci:\n      issuer: ci\n      publicKey: |\n"
        + "".join(f"        {line}\n" for line in pem.splitlines())
    )
    key = tmp_path / "k" / "changeloop.key"
    sign = ["receipt", "sign", "--root", str(root), "--change", "c1", "--claims", "reviewed"]
    return root, change, [*sign, "--key", str(key), "--issuer", "ci"]


def test_committed_sign_off_proves_without_local_state(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A fresh CI checkout: only openspec/changes/<id>/receipts/, verified with the CI key."""
    root, change, base = _reviewed_by_ci(tmp_path, capsys)
    code, doc = gate(root, capsys)
    assert code == 1 and codes(doc, "reviewed") == ["no-receipt"]
    sign = [*base, "--out", str(change / "receipts" / "review.json")]
    assert run(sign, capsys)[0] == 0
    code, doc = gate(root, capsys)
    assert code == 0, doc
    assert not (root / ".changeloop" / "receipts").exists()
    # Signed by a key the change does not trust: unverified, not proven.
    assert run(["keygen", "--out", str(tmp_path / "other")], capsys)[0] == 0
    sign[sign.index("--key") + 1] = str(tmp_path / "other" / "changeloop.key")
    assert run(sign, capsys)[0] == 0
    code, doc = gate(root, capsys)
    assert code == 1 and codes(doc, "reviewed") == ["unverified"]


def test_newer_failed_receipt_beats_older_pass(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root, change, base = _reviewed_by_ci(tmp_path, capsys)
    assert run([*base, "--out", str(change / "receipts" / "a.json")], capsys)[0] == 0
    assert gate(root, capsys)[0] == 0
    assert (
        run([*base, "--status", "fail", "--out", str(change / "receipts" / "b.json")], capsys)[0]
        == 0
    )
    code, doc = gate(root, capsys)
    assert code == 1 and codes(doc, "reviewed") == ["failed"]
    (change / "receipts" / "b.json").unlink()
    assert gate(root, capsys)[0] == 0


def test_refusals_exit_2_in_the_gate_shape(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = workspace(tmp_path)
    code, doc, _ = run(["gate", "nope", "--root", str(root), "--json"], capsys)
    assert code == 2 and doc is not None
    assert doc["status"] == "not-proven" and doc["errors"][0]["code"]
    (root / "openspec" / "changes" / "c1" / "evidence.yaml").write_text("version: 3\nbogus: 1\n")
    code, doc, _ = run(["gate", "c1", "--root", str(root), "--json"], capsys)
    assert code == 2 and doc is not None and "bogus" in doc["errors"][0]["message"]


@pytest.mark.parametrize("proven", [True, False])
def test_console_script_exit_codes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], proven: bool
) -> None:
    root = workspace(tmp_path)
    if proven:
        assert prove(root, capsys) == 0
    proc = subprocess.run(
        ["changeloop", "gate", "c1", "--root", str(root)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == (0 if proven else 1)
    assert proc.stdout == ""  # human text goes to stderr
    # human text says the verdict in capitals, as the board does (JSON says not-proven)
    assert f"change c1: {'PROVEN' if proven else 'NOT PROVEN'}" in proc.stderr


def test_rewired_provider_is_stale_wiring(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Same content, another command for `check` (openspec/ is outside the content): stale."""
    root = workspace(tmp_path)
    assert prove(root, capsys) == 0
    execution = root / "openspec" / "changes" / "c1" / "execution.yaml"
    proven = execution.read_text()
    execution.write_text(
        proven.replace(
            "command: [sh, check.sh]\n    claims", "command: [sh, -c, exit 0]\n    claims"
        )
    )
    code, doc = gate(root, capsys)
    assert code == 1 and codes(doc) == ["stale-wiring"]
    assert "check" in doc["claims"]["greeting"]["reasons"][0]["message"]
    assert doc["requires"] == {"static-analysis": {"self": "pass"}}  # its wiring is unchanged
    execution.write_text(proven)
    assert gate(root, capsys)[0] == 0


def test_receipt_without_wiring_digest_is_stale_wiring(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A prove receipt from before receipts carried `wiring` (re-signed here with the workspace key)."""
    from changeloop.signing.jcs import canonicalize
    from changeloop.signing.keys import workspace_key
    from changeloop.signing.statement import seal

    root = workspace(tmp_path)
    assert prove(root, capsys) == 0
    path = root / ".changeloop" / "receipts" / "c1" / "check.check.json"
    statement = json.loads(base64.b64decode(json.loads(path.read_text())["payload"]))
    statement["predicate"]["changeloop"].pop("wiring")
    statement["predicate"]["changeloop"]["schema"] = "changeloop/receipt@1"
    path.write_bytes(seal(json.loads(canonicalize(statement)), workspace_key(root)).envelope)
    code, doc = gate(root, capsys)
    assert code == 1 and codes(doc) == ["stale-wiring"], doc


def _ci_workspace(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], accepts: str
) -> tuple[Path, Path]:
    """`check` is proven in CI (signed with the CI key); the change trusts that key."""
    root = workspace(tmp_path)
    assert run(["keygen", "--out", str(tmp_path / "k")], capsys)[0] == 0
    pem = (tmp_path / "k" / "changeloop.pub").read_text()
    change = root / "openspec" / "changes" / "c1"
    (change / "evidence.yaml").write_text("version: 3\nclaims:\n  greeting: {requires: [check]}\n")
    with (change / "execution.yaml").open("a") as fh:
        fh.write(
            f"  ci-check:\n    adapter: external\n    capability: ci-check\n{accepts}"
            "    ci:\n      issuer: ci\n      publicKey: |\n"
            + "".join(f"        {line}\n" for line in pem.splitlines())
        )
    key = str(tmp_path / "k" / "changeloop.key")
    assert prove(root, capsys, "--sign-key", key, "--issuer", "ci") == 0
    receipts = change / "receipts"
    receipts.mkdir()
    for path in (root / ".changeloop" / "receipts" / "c1").glob("check.*.json"):
        (receipts / path.name).write_bytes(path.read_bytes())
    import shutil

    shutil.rmtree(root / ".changeloop")  # a fresh checkout: committed receipts only
    return root, change


def test_committed_ci_receipt_counts_for_a_provider_it_accepts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root, _change = _ci_workspace(tmp_path, capsys, "    accepts: [check]\n")
    code, doc = gate(root, capsys)
    assert code == 0, doc


def test_committed_ci_receipt_without_accepts_does_not_count(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root, _change = _ci_workspace(tmp_path, capsys, "")
    code, doc = gate(root, capsys)
    assert code == 1 and codes(doc) == ["unverified"]
    assert "accepts" in doc["claims"]["greeting"]["reasons"][0]["message"]

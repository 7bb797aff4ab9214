"""A cloned repository cannot plant the workspace state; files never follow a planted symlink.

docs/threat-model.md. Every test drives the real CLI on real git
repositories: the attacker's moves (a committed ``.changeloop`` symlink, a
committed key and cache, a symlink planted where a file is about to be
written) are made for real and the test looks at what changeloop said and at
what is on disk.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
from pathlib import Path
from typing import Any

import pytest
from prove_helpers import git, make_change, make_repo, prove_json, provider_entry
from receipts_helpers import make_workspace

import changeloop.fingerprints.fingerprint
import changeloop.signing.keys
import changeloop.workspace.accepted
import changeloop.workspace.state
from changeloop.cli.main import main
from changeloop.errors import StateRefused

EVIDENCE = """\
version: 3
claims:
  works: {statement: the code works, requires: [test]}
"""
# Passes only when PLANT_PASS is set: the attacker sets it once to mint a pass;
# on the victim's machine the provider, if it ran, would fail.
EXECUTION = """\
version: 1
providers:
  test:
    adapter: command
    command: [sh, -c, 'test -n "$PLANT_PASS"']
    passEnv: [PLANT_PASS]
    claims: [works]
"""


def _workspace(tmp_path: Path) -> Path:
    root = make_repo(tmp_path / "ws", {"src/app.py": "print('hi')\n"}, commit=False)
    make_change(root, "c1", EVIDENCE, EXECUTION)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "init")
    return root


def _prove_passing(
    root: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PLANT_PASS", "1")
    code, doc = prove_json(root, "c1", capsys=capsys)
    monkeypatch.delenv("PLANT_PASS")
    assert code == 0, doc


def _refusal(root: Path, capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, object]:
    capsys.readouterr()
    code = main(["prove", "c1", "--root", str(root), "--json", *argv])
    doc = json.loads(capsys.readouterr().out)
    assert code == 2, doc
    assert doc["errors"], doc
    return dict(doc["errors"][0])


# -- the planted state -----------------------------------------------------
def test_a_cloned_repository_with_a_committed_state_symlink_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The issue's exploit: `.changeloop -> openspec/state`, a committed key and sealed cache."""
    evil = _workspace(tmp_path)
    (evil / "openspec" / "state").mkdir()
    (evil / ".changeloop").symlink_to("openspec/state")
    git(evil, "add", "-A")
    git(evil, "commit", "-q", "-m", "state")
    # The attacker mints the cache with a changeloop that lets it write through the
    # symlink (as the code before this rule did); the bytes are what gets committed.
    with monkeypatch.context() as m:
        m.setattr(changeloop.workspace.state, "check_state", lambda _root: None, raising=False)
        m.setattr(changeloop.signing.keys, "check_state", lambda _root: None, raising=False)
        m.setattr(changeloop.workspace.state, "_check_dir", lambda _path: True, raising=False)
        # ... and that does not see the committed link into openspec/ as an open identity
        m.setattr(changeloop.fingerprints.fingerprint, "external_symlinks", lambda *_a: {})
        _prove_passing(evil, monkeypatch, capsys)
    planted = evil / "openspec" / "state"
    assert any((planted / "cache").iterdir())
    (planted / ".gitignore").unlink()
    git(evil, "add", "-f", "openspec/state/keys", "openspec/state/cache")
    git(evil, "commit", "-q", "-m", "cache")

    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(evil), str(clone)], check=True)
    assert (clone / ".changeloop").is_symlink()
    error = _refusal(clone, capsys)
    assert error["path"] == str(clone / ".changeloop")
    assert "symlink" in str(error["message"]) and "fix" in error
    assert not (clone / "openspec" / "state" / "runs").exists()  # nothing ran
    # Deleting the link is not enough while git still tracks it; the next refusal says so.
    (clone / ".changeloop").unlink()
    error = _refusal(clone, capsys)
    assert "git tracks" in str(error["message"]) and "git rm -r --cached" in str(error["fix"])
    # Following that fix, the provider runs for real — and fails, as the code does.
    git(clone, "rm", "-r", "-q", "--cached", ".changeloop", "openspec/state")
    code, doc = prove_json(clone, "c1", capsys=capsys)
    assert code == 1 and doc["status"] == "not-proven"
    assert provider_entry(doc, "test")["state"] == "ran"


def test_tracked_files_under_the_state_are_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    root = _workspace(tmp_path)
    _prove_passing(root, monkeypatch, capsys)
    git(root, "add", "-f", ".changeloop/keys/local.key", ".changeloop/cache")
    git(root, "commit", "-q", "-m", "oops")
    error = _refusal(root, capsys)
    assert error["path"] == str(root / ".changeloop")
    assert "git tracks" in str(error["message"]) and "local.key" in str(error["message"])
    assert "git rm -r --cached .changeloop" in str(error["fix"])


@pytest.mark.parametrize("sub", ["keys", "cache", "runs", "receipts", "sandboxes"])
def test_a_symlinked_state_directory_is_refused(
    tmp_path: Path,
    sub: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    root = _workspace(tmp_path)
    _prove_passing(root, monkeypatch, capsys)
    state = root / ".changeloop"
    elsewhere = tmp_path / f"elsewhere-{sub}"
    (state / sub).mkdir(exist_ok=True)
    shutil.move(state / sub, elsewhere)
    (state / sub).symlink_to(elsewhere)
    before = sorted(p.name for p in elsewhere.iterdir())
    error = _refusal(root, capsys)
    assert error["path"] == str(state / sub) and "symlink" in str(error["message"])
    assert sorted(p.name for p in elsewhere.iterdir()) == before  # nothing written there


def test_the_workspace_key_must_be_private(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    root = _workspace(tmp_path)
    _prove_passing(root, monkeypatch, capsys)
    key = root / ".changeloop" / "keys" / "local.key"
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    key.chmod(0o640)
    error = _refusal(root, capsys)
    assert error["path"] == str(key) and "0640" in str(error["message"])
    assert f"chmod 600 {key}" in str(error["fix"])


def test_the_workspace_key_is_never_read_through_a_symlink(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    root = _workspace(tmp_path)
    _prove_passing(root, monkeypatch, capsys)
    key = root / ".changeloop" / "keys" / "local.key"
    moved = tmp_path / "planted.key"
    shutil.move(key, moved)
    key.symlink_to(moved)
    error = _refusal(root, capsys)
    assert error["path"] == str(key) and "not a regular file" in str(error["message"])


def test_a_cache_entry_is_reused_only_with_the_key_that_sealed_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    root = _workspace(tmp_path)
    _prove_passing(root, monkeypatch, capsys)
    keys = root / ".changeloop" / "keys"
    monkeypatch.setenv("PLANT_PASS", "1")
    code, doc = prove_json(root, "c1", capsys=capsys)
    assert code == 0 and provider_entry(doc, "test")["state"] == "cached"
    # A new workspace key: every entry sealed by the old one is a miss, never a pass.
    (keys / "local.key").unlink()
    (keys / "local.pub").unlink()
    monkeypatch.delenv("PLANT_PASS")
    code, doc = prove_json(root, "c1", capsys=capsys)
    assert provider_entry(doc, "test")["state"] == "ran"
    assert code == 1 and doc["status"] == "not-proven"


# -- private keys given on the command line ------------------------------------
def _keygen(out: Path) -> Path:
    assert main(["keygen", "--out", str(out)]) == 0
    return out / "changeloop.key"


@pytest.mark.parametrize("mode", [0o644, 0o640, 0o604, 0o660])
def test_sign_key_with_group_or_other_bits_is_refused(
    tmp_path: Path, mode: int, capsys: pytest.CaptureFixture[str]
) -> None:
    root = _workspace(tmp_path)
    key = _keygen(tmp_path / "ci")
    key.chmod(mode)
    error = _refusal(root, capsys, "--sign-key", str(key))
    assert "too open" in str(error["message"]) and f"{mode:04o}" in str(error["message"])
    assert not (root / ".changeloop" / "runs").exists()
    key.chmod(0o400)  # owner-only (even read-only) is accepted
    capsys.readouterr()
    monkeypatch_env = {**os.environ, "PLANT_PASS": "1"}
    done = subprocess.run(
        ["changeloop", "prove", "c1", "--root", str(root), "--sign-key", str(key)],
        env=monkeypatch_env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr


def test_receipt_sign_refuses_a_readable_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    key = _keygen(tmp_path / "ci")
    root = tmp_path / "ws"
    make_workspace(root, pub_pem=(tmp_path / "ci" / "changeloop.pub").read_text())
    key.chmod(0o644)
    out = tmp_path / "r.json"
    capsys.readouterr()
    code = main(
        [
            "receipt",
            "sign",
            "--root",
            str(root),
            "--change",
            "add-review",
            "--claims",
            "auth-boundary",
            "--key",
            str(key),
            "--issuer",
            "github-actions",
            "--out",
            str(out),
        ]
    )
    assert code == 2
    assert "too open" in capsys.readouterr().err
    assert not out.exists()


# -- keygen --------------------------------------------------------------------
def test_keygen_refuses_a_directory_git_would_not_ignore(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = make_repo(tmp_path / "repo", {"README": "x\n"})
    capsys.readouterr()
    assert main(["keygen", "--out", str(repo / "keys"), "--json"]) == 2
    doc = json.loads(capsys.readouterr().out)
    assert doc["errors"][0]["code"] == "key_not_ignored"
    assert ".gitignore" in doc["errors"][0]["fix"]
    assert not (repo / "keys").exists()
    # The repository's root itself, and a subdirectory that does not exist yet, alike.
    assert main(["keygen", "--out", str(repo)]) == 2
    assert main(["keygen", "--out", str(repo / "a" / "b")]) == 2
    assert not (repo / "changeloop.key").exists() and not (repo / "a").exists()
    # Ignored: accepted.
    (repo / ".gitignore").write_text("keys/\n")
    assert main(["keygen", "--out", str(repo / "keys")]) == 0
    assert stat.S_IMODE((repo / "keys" / "changeloop.key").stat().st_mode) == 0o600
    # Outside any work tree: accepted.
    assert main(["keygen", "--out", str(tmp_path / "outside")]) == 0


def test_keygen_never_writes_through_a_planted_symlink(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],  # noqa: ARG001 (quiets the CLI)
) -> None:
    out = tmp_path / "keys"
    out.mkdir()
    victim = tmp_path / "attacker-readable.txt"
    victim.write_text("")
    victim.chmod(0o644)
    # The old writer's predictable temporary name, opened with O_CREAT|O_TRUNC: the
    # private key went into the attacker's file (and keygen printed "mode 0600").
    (out / f".changeloop.key.tmp{os.getpid()}").symlink_to(victim)
    assert main(["keygen", "--out", str(out)]) == 0
    assert victim.read_text() == ""
    key = out / "changeloop.key"
    assert key.is_file() and not key.is_symlink()
    assert b"PRIVATE KEY" in key.read_bytes()
    # A dangling symlink standing at the key's own name is refused, never followed.
    out2 = tmp_path / "keys2"
    out2.mkdir()
    (out2 / "changeloop.key").symlink_to(tmp_path / "would-be-created")
    assert main(["keygen", "--out", str(out2)]) == 2
    assert not (tmp_path / "would-be-created").exists()


# -- receipt import --------------------------------------------------------------
@pytest.fixture
def signed_receipt(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[Path, Path, Path]:
    keys = tmp_path / "keys"
    _keygen(keys)
    root = tmp_path / "ws"
    make_workspace(root, pub_pem=(keys / "changeloop.pub").read_text())
    receipt = tmp_path / "r.json"
    assert (
        main(
            [
                "receipt",
                "sign",
                "--root",
                str(root),
                "--change",
                "add-review",
                "--claims",
                "auth-boundary",
                "--key",
                str(keys / "changeloop.key"),
                "--issuer",
                "github-actions",
                "--out",
                str(receipt),
            ]
        )
        == 0
    )
    capsys.readouterr()
    return root, keys, receipt


def _import(
    root: Path, receipt: Path, capsys: pytest.CaptureFixture[str]
) -> tuple[int, dict[str, object]]:
    capsys.readouterr()
    code = main(
        ["receipt", "import", str(receipt), "--change", "add-review", "--root", str(root), "--json"]
    )
    return code, json.loads(capsys.readouterr().out)


def test_import_refuses_a_symlinked_receipts_directory(
    tmp_path: Path, signed_receipt: tuple[Path, Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    root, _keys, receipt = signed_receipt
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    receipts = root / "openspec" / "changes" / "add-review" / "receipts"
    receipts.symlink_to(elsewhere)
    code, doc = _import(root, receipt, capsys)
    assert code == 1 and doc["imported"] == []
    errors: Any = doc["errors"]
    assert any(e["code"] == "receipts_symlinked" and e["path"] == str(receipts) for e in errors)
    assert list(elsewhere.iterdir()) == []
    receipts.unlink()
    code, doc = _import(root, receipt, capsys)
    assert code == 0 and len(doc["imported"]) == 1  # type: ignore[arg-type]
    assert not receipts.is_symlink() and len(list(receipts.iterdir())) == 1


def test_import_refuses_a_receipts_directory_under_a_symlink(
    tmp_path: Path, signed_receipt: tuple[Path, Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    root, _keys, receipt = signed_receipt
    change = root / "openspec" / "changes" / "add-review"
    moved = tmp_path / "real-change"
    shutil.move(change, moved)
    change.symlink_to(moved)
    code, doc = _import(root, receipt, capsys)
    assert code == 1
    assert any(e["path"] == str(change) for e in doc["errors"])  # type: ignore[attr-defined]
    assert not (moved / "receipts").exists()


def test_import_refuses_a_planted_state(
    signed_receipt: tuple[Path, Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root, _keys, receipt = signed_receipt
    (root / ".changeloop").symlink_to(tmp_path)
    code, doc = _import(root, receipt, capsys)
    assert code == 2
    assert doc["errors"][0]["path"] == str(root / ".changeloop")  # type: ignore[index]
    assert not (root / "openspec" / "changes" / "add-review" / "receipts").exists()


def test_the_state_is_checked_once_per_invocation_and_afresh_by_the_next(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # One CLI invocation asks check_state several times (prove: four); between them only
    # changeloop writes .changeloop/. The next invocation, and any caller outside one,
    # checks again — a symlink planted in between is refused.
    root = make_repo(tmp_path / "ws", {"a.txt": "a\n"})
    (root / ".changeloop" / "cache").mkdir(parents=True)
    seen: list[Path] = []
    real = changeloop.workspace.state._check_tracked

    def counted(where: Path) -> None:
        seen.append(where)
        real(where)

    monkeypatch.setattr(changeloop.workspace.state, "_check_tracked", counted)
    with changeloop.workspace.accepted.one_check_per_invocation():
        for _ in range(4):
            changeloop.workspace.state.check_state(root)
    assert len(seen) == 1

    shutil.rmtree(root / ".changeloop" / "cache")
    (root / ".changeloop" / "cache").symlink_to(tmp_path)
    with changeloop.workspace.accepted.one_check_per_invocation(), pytest.raises(StateRefused):
        changeloop.workspace.state.check_state(root)
    with pytest.raises(StateRefused):
        changeloop.workspace.state.check_state(root)  # outside an invocation: every call checks

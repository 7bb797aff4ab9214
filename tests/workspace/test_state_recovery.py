"""Damaged state under ``.changeloop/`` is ignored and rebuilt; a state path that is no directory
is a refusal; files named by wiring never hang or exhaust a run (docs/processes.md).

Each test damages a real workspace the way the fault-injection pass did, then
runs the real CLI and checks the exit code, what it said, and what is on disk
afterwards. Never exit 3.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from prove_helpers import git, make_change, make_repo, prove_json, provider_entry

from changeloop.cli.main import main

EVIDENCE = """\
version: 3
claims:
  works: {statement: the code works, requires: [test]}
"""
EXECUTION = f"""\
version: 1
providers:
  test: {{adapter: command, command: ["{sys.executable}", -c, "print('ok')"], claims: [works]}}
"""
DEEP = b"[" * 100_000 + b"]" * 100_000


def _workspace(tmp_path: Path, execution: str = EXECUTION, evidence: str = EVIDENCE) -> Path:
    root = make_repo(tmp_path / "ws", {"src/app.py": "print('hi')\n"}, commit=False)
    make_change(root, "c1", evidence, execution)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "init")
    return root


def _proven(root: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> dict[str, Any]:
    code, doc = prove_json(root, "c1", *extra, capsys=capsys)
    assert code == 0, doc
    assert doc["status"] == "proven"
    return doc


# -- damaged state: ignored and rebuilt ----------------------------------------
@pytest.mark.parametrize(
    "damage",
    # empty: what a power cut may leave of durations written without fsync (hints)
    [b"[1, 2]", b'{"c1": [1]}', b'{"c1": {"test": "slow"}, "c2": 5}', DEEP, b"\xff\xfe\x00", b""],
    ids=["list", "wrong-shape", "wrong-values", "deeply-nested", "not-utf8", "empty"],
)
def test_damaged_durations_are_rebuilt(
    tmp_path: Path, damage: bytes, capsys: pytest.CaptureFixture[str]
) -> None:
    root = _workspace(tmp_path)
    _proven(root, capsys)
    durations = root / ".changeloop" / "durations.json"
    durations.write_bytes(damage)
    _proven(root, capsys, "--no-cache")  # it runs, so its duration is written again
    rebuilt = json.loads(durations.read_text())
    assert isinstance(rebuilt["c1"]["test"], float)


def test_durations_that_are_a_directory_are_rebuilt(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = _workspace(tmp_path)
    durations = root / ".changeloop" / "durations.json"
    (durations / "nested").mkdir(parents=True)
    _proven(root, capsys)
    assert durations.is_file() and "test" in json.loads(durations.read_text())["c1"]


def _entries(root: Path) -> list[Path]:
    return sorted((root / ".changeloop" / "cache").glob("*.json"))


def test_a_deeply_nested_cache_entry_is_a_miss_and_rebuilt(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = _workspace(tmp_path)
    _proven(root, capsys)
    (entry,) = _entries(root)
    entry.write_bytes(DEEP)
    doc = _proven(root, capsys)
    assert provider_entry(doc, "test")["state"] == "ran"  # a miss, not "not-run"
    doc = _proven(root, capsys)
    assert provider_entry(doc, "test")["state"] == "cached"  # rebuilt by the run before


@pytest.mark.parametrize("kind", ["directory", "fifo", "symlink"])
def test_a_cache_entry_that_is_not_a_file_is_a_miss_and_rebuilt(
    tmp_path: Path, kind: str, capsys: pytest.CaptureFixture[str]
) -> None:
    root = _workspace(tmp_path)
    _proven(root, capsys)
    (entry,) = _entries(root)
    good = entry.read_bytes()
    entry.unlink()
    if kind == "directory":
        (entry / "inner").mkdir(parents=True)
    elif kind == "fifo":
        os.mkfifo(entry)
    else:
        (tmp_path / "elsewhere.json").write_bytes(good)  # even a valid entry, behind a link
        entry.symlink_to(tmp_path / "elsewhere.json")
    doc = _proven(root, capsys)
    assert provider_entry(doc, "test")["state"] == "ran"
    assert entry.is_file() and not entry.is_symlink()


def test_a_sandbox_folder_named_with_a_twenty_digit_pid_is_cleared(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = _workspace(tmp_path)
    odd = root / ".changeloop" / "sandboxes" / "self.99999999999999999999-1.abcd"
    (odd / "src").mkdir(parents=True)
    _proven(root, capsys, "--sandbox", "copy")
    assert not odd.exists()  # no process can have that pid: its owner is gone


@pytest.mark.parametrize("kind", ["directory", "fifo", "symlink", "dangling-symlink"])
def test_a_receipts_entry_that_is_not_a_file_is_rebuilt(
    tmp_path: Path, kind: str, capsys: pytest.CaptureFixture[str]
) -> None:
    root = _workspace(tmp_path)
    _proven(root, capsys)
    latest = root / ".changeloop" / "receipts" / "c1" / "test.test.json"
    good = latest.read_bytes()
    latest.unlink()
    stray = latest.with_name("stray.json")  # not the name of any receipt: only cleared
    for path in (latest, stray):
        if kind == "directory":
            (path / "junk").mkdir(parents=True)
        elif kind == "fifo":
            os.mkfifo(path)
        elif kind == "symlink":  # even a valid receipt, behind a link
            (tmp_path / f"{path.name}.elsewhere").write_bytes(good)
            path.symlink_to(tmp_path / f"{path.name}.elsewhere")
        else:
            path.symlink_to(tmp_path / "nowhere")
    _proven(root, capsys)
    assert latest.is_file() and not latest.is_symlink()
    assert json.loads(latest.read_bytes())["payloadType"]
    assert not stray.exists() and not stray.is_symlink()


# -- a state path that is not a directory: refusal, exit 2, named ---------------
@pytest.mark.parametrize("damage", ["state-file", "dangling-symlink", "runs-file", "cache-file"])
def test_a_state_path_that_is_not_a_directory_is_refused(
    tmp_path: Path, damage: str, capsys: pytest.CaptureFixture[str]
) -> None:
    root = _workspace(tmp_path)
    state = root / ".changeloop"
    if damage == "state-file":
        state.write_text("not a directory\n")
        named = state
    elif damage == "dangling-symlink":
        state.symlink_to(tmp_path / "gone")
        named = state
    else:
        state.mkdir()
        named = state / damage.removesuffix("-file")
        named.write_text("not a directory\n")
    code, doc = prove_json(root, "c1", capsys=capsys)
    assert code == 2, doc
    assert doc["status"] == "not-proven"
    assert doc["errors"][0]["path"] == str(named)
    assert doc["errors"][0]["fix"]
    assert not (tmp_path / "gone").exists()


# -- files named by wiring: regular, bounded, never waited on --------------------
EXTERNAL = """\
version: 1
providers:
  review: {adapter: external, claims: [works], ci: {issuer: ci, publicKeyFile: ci.pub}}
"""
EVIDENCE_REVIEW = """\
version: 3
claims:
  works: {statement: the code works, requires: [review]}
"""


def _cli(root: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    """The real console script, with a timeout: a hang is a failure, not a stuck suite."""
    return subprocess.run(
        ["changeloop", *argv, "--root", str(root), "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
    )


@pytest.mark.parametrize("kind", ["fifo", "dev-zero"])
@pytest.mark.parametrize("verb", [("prove", "c1", "--dry-run"), ("evidence", "detect", "c1")])
def test_a_public_key_file_that_is_not_regular_is_refused_promptly(
    tmp_path: Path, kind: str, verb: tuple[str, ...]
) -> None:
    root = _workspace(tmp_path, EXTERNAL, EVIDENCE_REVIEW)
    pub = root / "openspec" / "changes" / "c1" / "ci.pub"
    if kind == "fifo":
        os.mkfifo(pub)
    else:
        pub.symlink_to("/dev/zero")
    done = _cli(root, *verb)
    assert done.returncode == 2, done.stderr
    doc = json.loads(done.stdout)
    (error,) = doc["errors"]
    assert "ci.pub" in error["message"] and "not a regular file" in error["message"]
    assert error["path"].endswith("execution.yaml")


def test_a_contract_file_that_is_a_fifo_fails_the_provider_not_the_run(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],  # noqa: ARG001 (quiets the CLI)
) -> None:
    execution = """\
    version: 1
    providers:
      contract: {adapter: contract-digest, contract: {self: api.json, other: api.json}, claims: [works]}
    """
    evidence = """\
    version: 3
    repositories: {self: ., other: other}
    claims:
      works: {statement: same contract, requires: [cross-repo-contract]}
    """
    root = make_repo(tmp_path / "ws", {"src/app.py": "x\n"}, commit=False)
    make_repo(root / "other", {"api.json": "{}\n"})
    make_change(root, "c1", evidence, execution)
    (root / ".gitignore").write_text("other/\n")
    os.mkfifo(root / "api.json")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "init")
    done = _cli(root, "prove", "c1")
    assert done.returncode == 1, done.stderr
    doc = json.loads(done.stdout)
    assert "FIFO" in json.dumps(doc["claims"]), doc["claims"]


def test_a_cli_that_meets_damaged_state_never_exits_3(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every damage at once, then the verbs that read state: clean answers only."""
    root = _workspace(tmp_path)
    _proven(root, capsys)
    state = root / ".changeloop"
    (state / "durations.json").write_bytes(DEEP)
    for entry in _entries(root):
        entry.write_bytes(DEEP)
    (state / "sandboxes" / "x.123456789012345678901234-5.ab").mkdir(parents=True)
    latest = state / "receipts" / "c1" / "test.test.json"
    latest.unlink()
    os.mkfifo(latest)
    capsys.readouterr()
    assert main(["prove", "c1", "--root", str(root)]) == 0
    assert latest.is_file()


@pytest.mark.parametrize("name", ["evidence.yaml", "execution.yaml"])
def test_a_change_file_that_is_a_fifo_is_refused_not_waited_on(tmp_path: Path, name: str) -> None:
    root = _workspace(tmp_path)
    path = root / "openspec" / "changes" / "c1" / name
    path.unlink()
    os.mkfifo(path)
    done = _cli(root, "prove", "c1", "--dry-run")
    assert done.returncode == 2, done.stderr
    (error,) = json.loads(done.stdout)["errors"]
    assert name in error["message"] and name in error["path"]


def _pub_dir(state: Path) -> None:
    (state / "keys" / "local.key").unlink()
    (state / "keys" / "local.pub").unlink()
    (state / "keys" / "local.pub" / "x").mkdir(parents=True)


def _gitignore_dir(state: Path) -> None:
    (state / ".gitignore").unlink()
    (state / ".gitignore").mkdir()


def _latest_to_dev_zero(state: Path) -> None:
    latest = state / "receipts" / "c1" / "test.test.json"
    latest.unlink()
    latest.symlink_to("/dev/zero")


def _cache_junk(state: Path) -> None:
    (state / "cache" / "README").write_text("not an entry")
    (state / "cache" / ("0" * 64 + ".json")).write_bytes(b"\x00" * 100)


def _runs_junk(state: Path) -> None:
    (state / "runs" / "20260101T000000Z-abcdef").write_text("a file where a run dir goes")


@pytest.mark.parametrize(
    "damage", [_pub_dir, _gitignore_dir, _latest_to_dev_zero, _cache_junk, _runs_junk]
)
def test_odd_state_is_worked_around_and_the_run_proves(
    tmp_path: Path, damage: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    root = _workspace(tmp_path)
    _proven(root, capsys)
    damage(root / ".changeloop")
    _proven(root, capsys)


def test_a_damaged_workspace_key_is_a_refusal_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = _workspace(tmp_path)
    _proven(root, capsys)
    key = root / ".changeloop" / "keys" / "local.key"
    key.write_bytes(b"garbage")
    code, doc = prove_json(root, "c1", capsys=capsys)
    assert code == 2 and doc["errors"][0]["path"] == str(key)

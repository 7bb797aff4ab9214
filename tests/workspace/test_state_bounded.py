"""State and logs stay bounded: damaged state is no memo, a stray file a note, a log capped.

Each of changeloop's own state files — the executables memo, the schema memo,
the durations, a run's process-group record — is replaced by a FIFO, by a
link to ``/dev/zero``, and by JSON nested 100,000 deep. ``prove`` runs as a
real process under a memory cap: it answers (exit 0, PROVEN) within the time
limit, without a traceback, and without growing memory. Before, the memo was
read whole: a FIFO hung the run, ``/dev/zero`` grew memory without limit, and
deep nesting exited 3 on every run. A stray file in ``receipts/`` refused
every prove; a provider printing gigabytes wrote them twice (log and stdout
copy), unbounded.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from prove_helpers import make_change, make_repo, prove_json
from repo_helpers import commit_all
from repo_paths import REPO_ROOT

from changeloop.cli.main import main

EVIDENCE = """\
version: 3
claims:
  greeting:
    statement: says hello
    requires: [check]
"""
EXECUTION = """\
version: 1
providers:
  test:
    adapter: command
    capability: check
    claims: [greeting]
    command: [sh, -c, "exit 0"]
"""
DEEP = b"[" * 100_000 + b"]" * 100_000
MEMORY_CAP = 3 << 30  # address space: a run that reads /dev/zero dies here, not the machine
RSS_LIMIT_KB = 400 * 1024


def _prove(root: Path, out: Path) -> tuple[int, str, int]:
    """(exit code, stderr, peak resident KiB) of a real ``prove`` under the memory cap."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
    argv = [sys.executable, "-m", "changeloop", "prove", "c1", "--root", str(root), "--json"]
    with (out / "stdout").open("wb") as stdout, (out / "stderr").open("wb") as stderr:
        proc = subprocess.Popen(
            ["prlimit", f"--as={MEMORY_CAP}", "--", *argv], env=env, stdout=stdout, stderr=stderr
        )
    deadline = time.monotonic() + 120
    while True:  # reaped here, for its resource usage (prlimit execs the command: one pid)
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
            break
        if time.monotonic() > deadline:
            proc.kill()
            proc.wait()
            pytest.fail("prove hung on a state file")
        time.sleep(0.05)
    err = (out / "stderr").read_text()
    doc = json.loads((out / "stdout").read_text())
    assert doc["status"] == "proven", err
    return proc.returncode, err, usage.ru_maxrss


def _damage(path: Path, kind: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists() or path.is_symlink():
        path.unlink()
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "dev-zero":
        path.symlink_to("/dev/zero")
    else:
        path.write_bytes(DEEP)


@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "deep"])
def test_damaged_state_files_are_no_memo(tmp_path: Path, kind: str) -> None:
    root = make_repo(tmp_path / "ws")
    make_change(root, "c1", EVIDENCE, EXECUTION)
    commit_all(root, "change")
    code, err, _ = _prove(root, tmp_path)
    assert code == 0, err
    state = root / ".changeloop"
    # A killed run's process-group record (its owner pid is one no process has).
    dead_run = state / "runs" / "20000101T000000Z-dead00" / "pgroups"
    dead_run.mkdir(parents=True)
    (dead_run / "owner.json").write_text(json.dumps({"pid": 2**22 + 7, "start": 1}))
    for name in ("executables.json", "validated.json", "durations.json"):
        _damage(state / name, kind)
    _damage(dead_run / "4242.json", kind)
    code, err, peak_kb = _prove(root, tmp_path)
    assert code == 0, err
    assert "Traceback" not in err
    assert peak_kb < RSS_LIMIT_KB, f"memory grew to {peak_kb} KiB"


def test_a_stray_file_in_receipts_is_noted_never_a_refusal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = make_repo(tmp_path / "ws")
    make_change(root, "c1", EVIDENCE, EXECUTION)
    commit_all(root, "change")
    receipts = root / ".changeloop" / "receipts"
    receipts.mkdir(parents=True)
    (receipts / "NOTES.txt").write_text("mine\n")
    (receipts / "c1").write_text("a file where the change's receipts go\n")
    code, doc = prove_json(root, "c1", capsys=capsys)
    assert code == 0, doc
    assert (receipts / "c1").is_dir()  # damaged state of ours: rebuilt
    assert (receipts / "NOTES.txt").read_text() == "mine\n"  # not ours to judge: kept
    capsys.readouterr()
    assert main(["prove", "c1", "--root", str(root), "--no-cache"]) == 0
    assert "ignoring .changeloop/receipts/NOTES.txt" in capsys.readouterr().err


LOUD = """\
import sys
chunk = b"x" * 65536 + b"\\n"
for _ in range(256):  # 16 MiB on stdout, the same on stderr
    sys.stdout.buffer.write(chunk)
    sys.stderr.buffer.write(chunk)
sys.stdout.buffer.write(b"the end\\n")
"""


def test_a_loud_provider_writes_at_most_the_log_limit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CHANGELOOP_LOG_LIMIT", "1M")
    root = make_repo(tmp_path / "ws", {"loud.py": LOUD})
    make_change(
        root,
        "c1",
        EVIDENCE,
        EXECUTION.replace('[sh, -c, "exit 0"]', f"[{sys.executable}, loud.py]"),
    )
    commit_all(root, "change")
    code, doc = prove_json(root, "c1", capsys=capsys)
    assert code == 0, doc
    run_dir = root / ".changeloop" / "runs" / doc["runId"] / "test"
    log, stdout = run_dir / "test.log", run_dir / "test.stdout"
    assert log.stat().st_size <= (1 << 20) + 512
    assert not stdout.exists()  # one copy: nothing here parses a plain command's stdout
    assert b"[changeloop] output truncated" in log.read_bytes()[-512:]


ENVELOPE = """\
import json, sys
sys.stderr.write("noise on stderr\\n")
print(json.dumps({"exit_code": 0, "passed": True, "findings": []}))
"""


def test_a_provider_whose_stdout_is_read_keeps_a_stdout_copy_beside_its_log(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The envelope is stdout alone (stderr noise would break its JSON): the one copy more."""
    root = make_repo(tmp_path / "ws", {"runner.py": ENVELOPE})
    execution = EXECUTION.replace('[sh, -c, "exit 0"]', f"[{sys.executable}, runner.py]")
    make_change(root, "c1", EVIDENCE, execution + "    envelope: true\n")
    commit_all(root, "change")
    code, doc = prove_json(root, "c1", capsys=capsys)
    assert code == 0, doc
    run_dir = root / ".changeloop" / "runs" / doc["runId"] / "test"
    assert (run_dir / "test.stdout").read_text().startswith('{"exit_code": 0')
    assert b"noise on stderr" in (run_dir / "test.log").read_bytes()

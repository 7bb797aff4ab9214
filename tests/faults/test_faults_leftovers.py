"""Every run's processes are ended, whatever ends it: real processes, ports and signals.

- A run killed with -9 leaves a process tree, a ``setsid`` daemon and a server
  on a port; a re-prove answered from the no-change record (no run of its
  own) and ``gate`` end them before they answer, as a full prove does.
- A daemon a provider starts with ``setsid`` (it carries the run's marker)
  is ended at the run's end.
- SIGHUP (the terminal closed) during a run: exit 130, one interrupted
  ``--json`` document, no process and no port left.
- A writer killed with -9 in the middle of the no-change record's write
  leaves a temp file in ``decisions/``; the next answer removes it.
- A signal at any moment of a re-prove's first instants is exit 130 with one
  ``--json`` document and no traceback, never swallowed.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from port_helpers import free_port
from prove_helpers import make_change, make_repo
from repo_helpers import commit_all
from repo_paths import REPO_ROOT

from changeloop.services.ports import port_holder

# A capability of the project's own: nothing is derived, so a re-prove can be answered
# from its no-change record.
EVIDENCE = """\
version: 3
claims:
  greeting:
    statement: says hello
    requires: [check]
"""


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
    return env


def _cli(root: Path, *argv: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "changeloop", *argv, "--root", str(root), "--json"],
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _done(proc: subprocess.Popen[str]) -> tuple[int, dict[str, Any], str]:
    out, err = proc.communicate(timeout=180)
    assert "Traceback" not in err, err
    return proc.returncode, json.loads(out), err


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rfind(")") + 2] not in "ZX"


def _wait_for(check: Any, what: str, proc: subprocess.Popen[str] | None = None) -> None:
    deadline = time.monotonic() + 120
    while not check():
        assert proc is None or proc.poll() is None, proc.communicate() if proc else None
        assert time.monotonic() < deadline, f"never happened: {what}"
        time.sleep(0.01)


def _tree_workspace(tmp_path: Path, port: int) -> tuple[Path, Path, Path]:
    """A change whose provider, while ``flag`` exists, leaves a tree, a daemon and a server."""
    flag, pids = tmp_path / "hold", tmp_path / "pids"
    py = sys.executable
    script = (
        f"if [ -e {flag} ]; then "
        f"setsid sleep 300 & echo $! >> {pids}; "
        f"{py} -m http.server {port} --bind 127.0.0.1 >/dev/null 2>&1 & echo $! >> {pids}; "
        f"sleep 300 & echo $! >> {pids}; echo $$ >> {pids}; "
        "wait; fi; exit 0"
    )
    root = make_repo(tmp_path / "ws")
    make_change(
        root,
        "hello",
        EVIDENCE,
        textwrap.dedent(f"""\
            version: 1
            providers:
              test:
                adapter: command
                capability: check
                claims: [greeting]
                command: [sh, -c, {json.dumps(script)}]
            """),
    )
    commit_all(root, "change")
    return root, flag, pids


@pytest.mark.parametrize("answer", ["prove", "gate"])
def test_what_a_killed_run_left_is_ended_by_an_answer_without_a_run(
    tmp_path: Path, answer: str
) -> None:
    port = free_port()
    root, flag, pids = _tree_workspace(tmp_path, port)
    for _ in range(2):  # a full run, then a cached one that writes the no-change record
        code, _doc, err = _done(_cli(root, "prove", "hello"))
        assert code == 0, err
    runs_before = sorted((root / ".changeloop" / "runs").iterdir())
    flag.touch()
    killed = _cli(root, "prove", "hello", "--no-cache")
    _wait_for(lambda: pids.exists() and len(pids.read_text().split()) == 4, "the tree", killed)
    _wait_for(lambda: port_holder(port) is not None, "the server", killed)
    killed.kill()
    killed.communicate()
    flag.unlink()
    left = [int(p) for p in pids.read_text().split()]
    assert all(_alive(pid) for pid in left)
    code, doc, err = _done(_cli(root, answer, "hello"))
    assert code == 0, (doc, err)
    assert doc["status"] == "proven"
    assert not [pid for pid in left if _alive(pid)], "the killed run's processes survived"
    assert port_holder(port) is None
    runs = sorted((root / ".changeloop" / "runs").iterdir())
    (killed_run,) = [r for r in runs if r not in runs_before and r.name != doc.get("runId")]
    assert not (killed_run / "pgroups").exists()  # its records went with its processes
    if answer == "prove":  # answered from the record: no provider ran
        # by its id: the killed run's folder may sort after it (both in the same second)
        answered = root / ".changeloop" / "runs" / doc["runId"] / "run.json"
        assert json.loads(answered.read_text())["decision"] == "no-change"


def test_a_setsid_daemon_of_a_provider_is_ended_at_the_runs_end(tmp_path: Path) -> None:
    daemon = tmp_path / "daemon.pid"
    root = make_repo(tmp_path / "ws")
    script = f"setsid sh -c 'echo $$ > {daemon}; exec sleep 300' & sleep 0.2; exit 0"
    make_change(
        root,
        "hello",
        EVIDENCE,
        textwrap.dedent(f"""\
            version: 1
            providers:
              test:
                adapter: command
                capability: check
                claims: [greeting]
                command: [sh, -c, {json.dumps(script)}]
            """),
    )
    commit_all(root, "change")
    code, _doc, err = _done(_cli(root, "prove", "hello"))
    assert code == 0, err
    pid = int(daemon.read_text())
    assert not _alive(pid), "the daemon outlived the run"


def test_sighup_ends_a_run_like_sigterm(tmp_path: Path) -> None:
    port = free_port()
    root, flag, pids = _tree_workspace(tmp_path, port)
    flag.touch()
    proc = _cli(root, "prove", "hello")
    _wait_for(lambda: pids.exists() and len(pids.read_text().split()) == 4, "the tree", proc)
    _wait_for(lambda: port_holder(port) is not None, "the server", proc)
    proc.send_signal(signal.SIGHUP)
    code, doc, err = _done(proc)
    assert code == 130, (doc, err)
    assert doc["interrupted"] is True and doc["change"] == "hello"
    assert not [pid for pid in map(int, pids.read_text().split()) if _alive(pid)]
    assert port_holder(port) is None


# The no-change record's writer, stopped for good between its temp file and the rename
# (where a kill -9 during the write leaves it): the temp file is the writer's own.
WRITER = """\
import os, sys, time
from changeloop.fsio import writes
fd, tmp = writes._exclusive_temp(sys.argv[1], "hello.json", 0o644)
os.write(fd, b'{"payloadType": "application/vnd.in-toto+json", "payl')
print(tmp, flush=True)
time.sleep(300)
"""


def test_a_record_write_killed_midway_leaves_no_temp_file_for_long(tmp_path: Path) -> None:
    root, _flag, _pids = _tree_workspace(tmp_path, free_port())
    for _ in range(2):
        code, _doc, err = _done(_cli(root, "prove", "hello"))
        assert code == 0, err
    decisions = root / ".changeloop" / "decisions"
    writer = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(decisions)], env=_env(), stdout=subprocess.PIPE
    )
    assert writer.stdout is not None
    temp = Path(writer.stdout.readline().decode().strip())
    writer.kill()
    writer.wait()
    writer.stdout.close()
    assert temp.parent == decisions and temp.is_file()
    code, doc, err = _done(_cli(root, "prove", "hello"))  # answered from the record
    assert code == 0, (doc, err)
    assert not temp.exists()


def _hup_in(status: Path, field: str, *, gone: bool) -> bool:
    """Whether SIGHUP is in the process's ``field`` mask (``gone``: the answer once it exited)."""
    try:
        line = next(x for x in status.read_text().splitlines() if x.startswith(field))
    except (OSError, StopIteration):
        return gone
    return bool(int(line.split()[1], 16) & (1 << (signal.SIGHUP - 1)))


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_a_signal_in_a_re_proves_first_instants_is_never_a_traceback_or_swallowed(
    tmp_path: Path, signum: signal.Signals
) -> None:
    root, _flag, _pids = _tree_workspace(tmp_path, free_port())
    for _ in range(2):
        began = time.monotonic()
        code, _doc, err = _done(_cli(root, "prove", "hello"))
        assert code == 0, err
    lifetime = time.monotonic() - began  # a re-prove's whole life on this machine, now
    chances = 0
    for _ in range(24):  # until six signals landed: a fast answer often ends before one
        if chances == 6:
            break
        proc = _cli(root, "prove", "hello")
        status = Path(f"/proc/{proc.pid}/status")
        handled = partial(_hup_in, status, "SigCgt", gone=False)
        # its exit code is settled: the CLI blocks the signals just before it leaves
        leaving = partial(_hup_in, status, "SigBlk", gone=True)
        _wait_for(handled, "the handlers", proc)
        # anywhere in its life: through the imports (a signal inside exec(str) too), git, the answer
        time.sleep(random.uniform(0, lifetime))
        if proc.poll() is not None or leaving():  # answered before the signal came
            proc.communicate()
            continue
        chances += 1
        proc.send_signal(signum)
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 130, (proc.returncode, out, err)
        assert "Traceback" not in err, err
        json.loads(out)  # exactly one document
    assert chances >= 3, chances

"""SIGINT, SIGTERM and SIGHUP are handled from the first moment the CLI runs (docs/processes.md).

Every test runs the real CLI in a subprocess (``python -m changeloop`` and the
``changeloop`` console script) and signals it before any event loop exists:
either as soon as its handlers are in place (while it is still importing), or
while preflight waits on git (a real git, slowed by a wrapper on PATH, so the
moment is known without timing guesses). The answer must be exit 130, one JSON
document with ``"interrupted": true`` in the verb's shape, and no traceback.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from prove_helpers import make_change, make_repo
from repo_paths import REPO_ROOT

ROOT = REPO_ROOT
SCRIPT = Path(sys.executable).parent / "changeloop"

EVIDENCE = """\
version: 3
claims:
  greeting:
    statement: says hello
    requires: [test]
"""
EXECUTION = """\
version: 1
providers:
  test:
    adapter: command
    capability: test
    claims: [greeting]
    command: [sh, -c, "exit 0"]
"""


def _env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    env.update(extra)
    return env


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = make_repo(tmp_path / "ws")
    make_change(root, "hello", EVIDENCE, EXECUTION)
    subprocess.run(["git", "add", "-A"], cwd=root, check=True)
    subprocess.run(["git", "commit", "-qm", "change"], cwd=root, check=True)
    return root


def _launchers() -> Iterator[list[str]]:
    yield [sys.executable, "-m", "changeloop"]
    if SCRIPT.exists():
        yield [str(SCRIPT)]


LAUNCHERS = list(_launchers())


def _caught(pid: int) -> int:
    """The process's caught-signal mask (0 once it is gone)."""
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0
    for line in text.splitlines():
        if line.startswith("SigCgt:"):
            return int(line.split()[1], 16)
    return 0


def _children(pid: int) -> list[int]:
    """The children of every thread of ``pid`` (git may be started on a thread of its own)."""
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            found += [int(x) for x in (task / "children").read_text().split()]
        except OSError:
            continue
    return found


def _finish(proc: subprocess.Popen[str]) -> tuple[int, str, str]:
    out, err = proc.communicate(timeout=120)
    return proc.returncode, out, err


def _assert_interrupted(code: int, out: str, err: str, change: str) -> None:
    assert code == 130, (code, out, err)
    assert "Traceback" not in err, err
    doc = json.loads(out)  # exactly one document
    assert doc["interrupted"] is True
    assert doc["version"] == "1"
    assert doc["status"] == "not-proven" and doc["providers"] == [] and doc["claims"] == {}
    assert doc["change"] == change


@pytest.mark.parametrize("launcher", LAUNCHERS, ids=["python-m", "script"][: len(LAUNCHERS)])
@pytest.mark.parametrize(
    "signum", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP], ids=["TERM", "INT", "HUP"]
)
def test_signal_as_soon_as_the_handlers_exist(
    workspace: Path, launcher: list[str], signum: signal.Signals
) -> None:
    """Handlers are in place before the verb's imports; a signal then is a clean 130."""
    term_bit = 1 << (signal.SIGHUP - 1)  # the last one installed
    proc = subprocess.Popen(
        [*launcher, "prove", "hello", "--root", str(workspace), "--json", "--dry-run"],
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    while proc.poll() is None and not _caught(proc.pid) & term_bit:
        time.sleep(0.0005)
    handled_before_exit = proc.poll() is None
    if handled_before_exit:
        proc.send_signal(signum)
    code, out, err = _finish(proc)
    assert handled_before_exit, f"no handlers before the process ended ({code}): {err}"
    _assert_interrupted(code, out, err, "hello")


@pytest.fixture
def slow_git(tmp_path: Path) -> Path:
    """A PATH directory whose ``git`` is the real git, started after a pause."""
    real = shutil.which("git")
    assert real is not None
    bindir = tmp_path / "slowbin"
    bindir.mkdir()
    wrapper = bindir / "git"
    wrapper.write_text(f'#!/bin/sh\nsleep 30\nexec {real} "$@"\n')
    wrapper.chmod(0o755)
    return bindir


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["TERM", "INT"])
def test_signal_while_preflight_waits_on_git(
    workspace: Path, slow_git: Path, signum: signal.Signals
) -> None:
    """Before the event loop (preflight runs git): 130 and one interrupted document."""
    env = _env(PATH=f"{slow_git}{os.pathsep}{os.environ['PATH']}")
    proc = subprocess.Popen(
        [sys.executable, "-m", "changeloop", "prove", "hello", "--root", str(workspace), "--json"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    while proc.poll() is None and not _children(proc.pid):
        time.sleep(0.001)
    proc.send_signal(signum)
    code, out, err = _finish(proc)
    _assert_interrupted(code, out, err, "hello")
    for child in _children(proc.pid):  # pragma: no cover - the process is gone
        os.kill(child, signal.SIGKILL)


def test_repeated_signals_give_one_document(workspace: Path, slow_git: Path) -> None:
    """A burst of signals (an impatient user, a supervisor) still gives exactly one answer."""
    env = _env(PATH=f"{slow_git}{os.pathsep}{os.environ['PATH']}")
    proc = subprocess.Popen(
        [sys.executable, "-m", "changeloop", "prove", "hello", "--root", str(workspace), "--json"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    while proc.poll() is None and not _children(proc.pid):
        time.sleep(0.001)
    for sig in (signal.SIGINT, signal.SIGTERM) * 20:
        if proc.poll() is not None:
            break
        proc.send_signal(sig)
    code, out, err = _finish(proc)
    _assert_interrupted(code, out, err, "hello")


def test_in_process_main_restores_the_callers_handlers(workspace: Path) -> None:
    """``main()`` called by a program installs its handlers only for the call."""
    from changeloop.cli.main import main

    before = signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)
    assert main(["prove", "hello", "--root", str(workspace), "--dry-run"]) == 0
    assert (signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)) == before


@pytest.mark.parametrize(
    ("argv", "shape"),
    [
        (["evidence", "detect", "hello"], {"repositories": {}, "change": "hello"}),
        (["evidence", "doctor", "hello"], {"findings": [], "unresolved": 0}),
    ],
    ids=["detect", "doctor"],
)
def test_other_verbs_answer_in_their_own_shape(
    workspace: Path, argv: list[str], shape: dict[str, object]
) -> None:
    term_bit = 1 << (signal.SIGTERM - 1)
    proc = subprocess.Popen(
        [*LAUNCHERS[0], *argv, "--root", str(workspace), "--json"],
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    while proc.poll() is None and not _caught(proc.pid) & term_bit:
        time.sleep(0.0005)
    assert proc.poll() is None
    proc.send_signal(signal.SIGTERM)
    code, out, err = _finish(proc)
    assert code == 130, (code, out, err)
    assert "Traceback" not in err
    doc = json.loads(out)
    assert doc["interrupted"] is True
    assert shape.items() <= doc.items(), doc


def test_usage_error_under_json_is_one_document(capsys: pytest.CaptureFixture[str]) -> None:
    from changeloop.cli.main import main

    assert main(["prove", "--json"]) == 2
    captured = capsys.readouterr()
    doc = json.loads(captured.out)
    assert doc["status"] == "not-proven"
    (error,) = doc["errors"]
    assert error["code"] == "usage" and "change" in error["message"]
    assert "usage: changeloop prove" in captured.err

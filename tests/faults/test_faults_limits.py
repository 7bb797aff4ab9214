"""No hang when a thread or a process cannot start: real limits on a real ``changeloop prove``.

The limit is tightened while the run's one provider waits, so the first thing
to need a new task afterwards is the receipt writer's thread: with a cgroup's
``pids.max`` (root, where a pids controller can be made) and with
``RLIMIT_NPROC`` set on the running process of an unprivileged user (root
ignores that limit, so changeloop runs as ``nobody`` there). The run must end
on its own with exit 1, its receipts failed and named ``cannot start a thread:
resource temporarily unavailable``, and a signal must still end a run held
under the limit (exit 130 and the interrupted document). Before, the writer's
pending count never dropped and the end-of-run wait looped forever, deaf to
SIGINT and SIGTERM.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from nobody_helpers import NOBODY, RUN_CLI, SYSTEM_PYTHON, needs_nobody, readable_site
from prove_helpers import make_change, make_repo
from repo_paths import REPO_ROOT

from changeloop.errors import NO_THREAD

DEADLINE_S = 90.0  # a run that takes longer than this under the limit counts as hung

EVIDENCE = """\
version: 3
claims:
  greeting:
    statement: says hello
    requires: [test]
"""


def _execution(flags: Path) -> str:
    # The provider announces itself, then waits without starting anything (no fork, no
    # thread) until the test has tightened the limit.
    script = (
        "import pathlib, time\n"
        f"flags = pathlib.Path({str(flags)!r})\n"
        "(flags / 'ready').touch()\n"
        "while not (flags / 'go').exists(): time.sleep(0.01)\n"
    )
    return textwrap.dedent(f"""\
        version: 1
        providers:
          test:
            adapter: command
            capability: test
            claims: [greeting]
            command: [python3, -c, {json.dumps(script)}]
        """)


def _pids_controller() -> Path | None:
    """A cgroup directory (v1 ``pids`` or v2 with ``pids`` enabled) we may make children in."""
    for base in (Path("/sys/fs/cgroup/pids"), Path("/sys/fs/cgroup")):
        probe = base / f"changeloop-probe-{uuid.uuid4().hex[:8]}"
        try:
            probe.mkdir()
        except OSError:
            continue
        usable = (probe / "pids.max").exists()
        probe.rmdir()
        if usable:
            return base
    return None


PIDS = _pids_controller()
needs_cgroup = pytest.mark.skipif(PIDS is None, reason="no pids cgroup can be made here")


class _Cgroup:
    """A pids cgroup of its own; whatever is left in it is killed when the test ends."""

    def __init__(self, base: Path) -> None:
        self.path = base / f"changeloop-limits-{uuid.uuid4().hex[:8]}"
        self.path.mkdir()

    def enter(self) -> None:  # runs in the child, before exec
        (self.path / "cgroup.procs").write_text(str(os.getpid()))

    def limit(self, count: int | str) -> None:
        (self.path / "pids.max").write_text(str(count))

    def close(self) -> None:
        self.limit("max")
        for _ in range(100):
            pids = (self.path / "cgroup.procs").read_text().split()
            if not pids:
                break
            for pid in pids:
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.05)
        self.path.rmdir()


@pytest.fixture
def cgroup() -> Iterator[_Cgroup]:
    assert PIDS is not None
    group = _Cgroup(PIDS)
    try:
        yield group
    finally:
        group.close()


def _env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
    env.update(extra)
    return env


def _workspace(base: Path) -> tuple[Path, Path]:
    flags = base / "flags"
    flags.mkdir()
    root = make_repo(base / "ws")
    make_change(root, "hello", EVIDENCE, _execution(flags))
    subprocess.run(["git", "add", "-A"], cwd=root, check=True)
    subprocess.run(["git", "commit", "-qm", "change"], cwd=root, check=True)
    return root, flags


def _tighten_when_ready(
    proc: subprocess.Popen[str], flags: Path, tighten: Callable[[], None]
) -> None:
    """Once the provider runs: the limit, then let it finish."""
    deadline = time.monotonic() + DEADLINE_S
    while not (flags / "ready").exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the provider never started"
        time.sleep(0.01)
    tighten()
    (flags / "go").touch()


def _finish(proc: subprocess.Popen[str]) -> tuple[int, dict[str, Any], str]:
    try:
        out, err = proc.communicate(timeout=DEADLINE_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        pytest.fail(f"prove hung under the limit: {err[-2000:]}")
    assert "Traceback" not in err, err
    return proc.returncode, json.loads(out), err


def _assert_writer_failed(code: int, doc: dict[str, Any], err: str) -> None:
    assert code == 1, (code, doc, err)
    assert doc["status"] == "not-proven"
    (provider,) = doc["providers"]
    assert provider["receipts"] == []  # what could not be written is not listed
    assert NO_THREAD in json.dumps(doc), doc
    assert NO_THREAD in err


@needs_cgroup
def test_a_writer_thread_that_cannot_start_fails_its_receipts_under_pids_max(
    tmp_path: Path, cgroup: _Cgroup
) -> None:
    root, flags = _workspace(tmp_path)
    proc = subprocess.Popen(
        [sys.executable, "-m", "changeloop", "prove", "hello", "--root", str(root), "--json"],
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=cgroup.enter,  # noqa: PLW1509 - only writes our pid to the cgroup
    )
    _tighten_when_ready(proc, flags, lambda: cgroup.limit(1))
    _assert_writer_failed(*_finish(proc))


@needs_cgroup
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["TERM", "INT"])
def test_a_run_held_under_pids_max_still_ends_on_a_signal(
    tmp_path: Path, cgroup: _Cgroup, signum: signal.Signals
) -> None:
    """Every wait is cancellable: no new thread or process is needed to stop."""
    root, flags = _workspace(tmp_path)
    proc = subprocess.Popen(
        [sys.executable, "-m", "changeloop", "prove", "hello", "--root", str(root), "--json"],
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=cgroup.enter,  # noqa: PLW1509 - only writes our pid to the cgroup
    )
    deadline = time.monotonic() + DEADLINE_S
    while not (flags / "ready").exists():
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.01)
    cgroup.limit(1)
    proc.send_signal(signum)  # the provider never gets its "go"
    code, doc, err = _finish(proc)
    assert code == 130, (code, doc, err)
    assert doc["interrupted"] is True


@pytest.fixture(scope="module")
def nobody_site() -> Iterator[Path]:
    base = readable_site(
        (
            "changeloop.cli.main",
            "changeloop.cli.prove.command",
            "changeloop.run.engine",
            "changeloop.plan",
            "changeloop.config.schema",
            "jsonschema",
            "rich",
        )
    )
    yield base
    shutil.rmtree(base, ignore_errors=True)


# Runs as nobody and starts the CLI as its child (the same user: lowering that child's
# limit needs no capability), then lowers RLIMIT_NPROC once the provider is waiting.
_LAUNCHER = """\
import pathlib, resource, subprocess, sys, time
flags = pathlib.Path(sys.argv[1])
child = subprocess.Popen(sys.argv[2:])
while not (flags / "ready").exists() and child.poll() is None:
    time.sleep(0.01)
resource.prlimit(child.pid, resource.RLIMIT_NPROC, (1, 1))
(flags / "go").touch()
sys.exit(child.wait())
"""


@needs_nobody
def test_a_writer_thread_that_cannot_start_fails_its_receipts_under_rlimit_nproc(
    nobody_site: Path,
) -> None:
    """``ulimit -u``: RLIMIT_NPROC of the running changeloop, lowered once its provider runs."""
    base = Path(tempfile.mkdtemp(prefix="changeloop-nproc-", dir="/tmp"))
    try:
        os.chmod(base, 0o755)
        root, flags = _workspace(base)
        subprocess.run(["chown", "-R", f"{NOBODY}:{NOBODY}", str(base)], check=True)
        env = {
            "PATH": "/usr/bin:/bin",
            "HOME": str(base),
            "PYTHONPATH": f"{REPO_ROOT}{os.pathsep}{nobody_site}",
            "GIT_CONFIG_NOSYSTEM": "1",
        }
        proc = subprocess.Popen(
            [
                *("setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"),
                *(str(SYSTEM_PYTHON), "-c", _LAUNCHER, str(flags)),
                *(str(SYSTEM_PYTHON), "-c", RUN_CLI, "prove", "hello", "--root", str(root)),
                "--json",
            ],
            cwd=root,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        _assert_writer_failed(*_finish(proc))
    finally:
        shutil.rmtree(base, ignore_errors=True)

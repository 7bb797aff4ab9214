"""The live view shows time passing: on a terminal its clocks tick between events; in a log a
heartbeat line says what still runs; a cached provider is never announced as running.

The terminal is a real pseudo-terminal (``pty.openpty``) the CLI writes to as it would to
a person's; two redrawn frames must show the running provider's clock at different
values while nothing else happened. The heartbeat runs a real pytest whose tests take a
while, through a pipe, and counts the tests it has streamed so far.
"""

from __future__ import annotations

import itertools
import os
import pty
import re
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest
from prove_helpers import git, make_change, make_repo

PY = sys.executable
ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b[()][A-Z0-9]|\x1b[=>]")
EVIDENCE = "version: 3\nrequires: [slow]\n"
EXECUTION = f"""\
version: 1
providers:
  slow:
    adapter: command
    command: ["{PY}", -c, "import time; time.sleep(3)"]
"""


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CHANGELOOP_")}
    env.pop("NO_COLOR", None)
    env.update(TERM="xterm-256color", COLUMNS="120", LINES="40", **extra)
    return env


def _in_a_terminal(root: Path) -> tuple[int, str]:
    """Run prove with stdout and stderr on a pty; everything it drew, and its exit code."""
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [PY, "-m", "changeloop", "prove", "c", "--root", str(root)],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        env=_env(),
        close_fds=True,
    )
    os.close(slave)
    chunks: list[bytes] = []
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 0.5)
        if ready:
            try:
                data = os.read(master, 65536)
            except OSError:  # the other side closed: the process is done
                break
            if not data:
                break
            chunks.append(data)
        elif proc.poll() is not None:
            break
    os.close(master)
    return proc.wait(timeout=60), b"".join(chunks).decode("utf-8", "replace")


def _frames_clock(drawn: str, provider: str) -> list[float]:
    """The clock of ``provider`` in each frame that shows it running, in order."""
    text = ANSI.sub("", drawn)
    pattern = rf"{provider}\s*│\s*running\s*│\s*([0-9.]+)s"
    return [float(v) for v in re.findall(pattern, text)]


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = make_repo(tmp_path / "ws", {"README.md": "x\n"})
    make_change(root, "c", EVIDENCE, EXECUTION)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "slow")
    return root


def test_the_running_clock_ticks_between_events_on_a_terminal(workspace: Path) -> None:
    code, drawn = _in_a_terminal(workspace)
    assert code == 0, ANSI.sub("", drawn)[-2000:]
    clocks = _frames_clock(drawn, "slow")
    # one provider, one event while it runs (started): every further frame is the clock
    assert len(set(clocks)) >= 2, ANSI.sub("", drawn)[-3000:]
    assert clocks == sorted(clocks) and max(clocks) - min(clocks) >= 1.0, clocks
    elapsed = re.findall(r"([0-9.]+)s elapsed", ANSI.sub("", drawn))
    assert len(set(elapsed)) >= 2  # the run's total ticks too
    assert "\x1b[1;32mPROVEN" in drawn  # the verdict in colour on a terminal


def test_a_cached_provider_is_never_announced_as_running(workspace: Path) -> None:
    code, _ = _in_a_terminal(workspace)
    assert code == 0
    code, drawn = _in_a_terminal(workspace)  # the same content: a cached pass
    text = ANSI.sub("", drawn)
    assert code == 0 and "cached" in text
    assert _frames_clock(drawn, "slow") == [] and not re.search(r"slow\s*│\s*running", text)
    # without a terminal: the progress lines say the same
    piped = subprocess.run(
        [PY, "-m", "changeloop", "prove", "c", "--root", str(workspace)],
        capture_output=True,
        text=True,
        env=_env(),
        check=False,
        timeout=120,
    )
    assert piped.returncode == 0
    assert "↺ slow reused a cached pass" in piped.stderr
    assert "▶ slow running" not in piped.stderr


SLOW_TESTS = "".join(f"import time\n\ndef test_{i}():\n    time.sleep(0.6)\n\n" for i in range(8))


def test_outside_a_terminal_a_heartbeat_says_what_still_runs(tmp_path: Path) -> None:
    root = make_repo(
        tmp_path / "ws", {"tests/test_slow.py": SLOW_TESTS, ".gitignore": "__pycache__/\n"}
    )
    make_change(
        root,
        "c",
        "version: 3\nrequires: [test]\n",
        "version: 1\nproviders:\n  test:\n    adapter: test-discovery\n"
        f'    command: ["{PY}", -m, pytest, -p, no:cacheprovider, '
        "--junitxml=.changeloop/reports/test.xml]\n"
        "    report: .changeloop/reports/test.xml\n",
    )
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "slow tests")
    started = time.monotonic()
    done = subprocess.run(
        [PY, "-m", "changeloop", "prove", "c", "--root", str(root)],
        capture_output=True,
        text=True,
        env=_env(CHANGELOOP_HEARTBEAT_S="1"),
        check=False,
        timeout=300,
    )
    took = time.monotonic() - started
    assert done.returncode == 0, done.stderr
    beats = [line for line in done.stderr.splitlines() if "still running: test " in line]
    assert len(beats) >= 2, done.stderr
    # bounded: never more than one a second (plus the first), and never silent longer
    assert len(beats) <= took + 1
    counted = [int(m) for b in beats for m in re.findall(r"(\d+) passed so far", b)]
    assert counted and counted == sorted(counted) and min(counted) < 8, beats  # while it ran
    assert max(counted) <= 8  # never more than the suite has
    stamps = [float(re.match(r"\[\s*([0-9.]+)s\]", b).group(1)) for b in beats]  # type: ignore[union-attr]
    assert all(b - a >= 0.9 for a, b in itertools.pairwise(stamps)), stamps

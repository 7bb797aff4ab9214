"""``spawn.start_child``: every command starts with the process group's discipline.

Each property is checked on a real child: its own session, SIGPIPE and SIGXFSZ
back to default, no inherited descriptor beyond 0-2, the environment and
directory it was given, a relative program found from that directory, a bare
name searched in the child's own ``PATH``, a missing executable or directory as
``FileNotFoundError``, and what a C string cannot carry refused.
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

import pytest

from changeloop.executors.job import env_delta
from changeloop.process.spawn import start_child

PROBE = """\
import os
fds = sorted(int(n) for n in os.listdir("/proc/self/fd"))
print(os.getsid(0) == os.getpid(), os.getpgrp() == os.getpid())
print(" ".join(map(str, fds)))
print(os.getcwd())
print(os.environ.get("SPAWN_PROBE"))
"""


def _run(argv: list[str], cwd: Path, env: dict[str, str], tmp: Path) -> list[str]:
    out = tmp / "out.txt"
    with out.open("wb") as sink, open(os.devnull, "rb") as devnull:
        child = start_child(
            argv,
            cwd=cwd,
            env=env,
            stdin=devnull.fileno(),
            stdout=sink.fileno(),
            stderr=sink.fileno(),
        )
        assert child.wait() == 0, out.read_text()
    return out.read_text().splitlines()


def _start(argv: list[str], cwd: Path, env: dict[str, str]) -> None:
    with open(os.devnull, "r+b") as devnull:
        child = start_child(
            argv,
            cwd=cwd,
            env=env,
            stdin=devnull.fileno(),
            stdout=devnull.fileno(),
            stderr=devnull.fileno(),
        )
        child.wait()


def test_a_child_leads_its_session_in_its_directory_with_only_its_stdio(tmp_path: Path) -> None:
    workdir = tmp_path / "work"
    workdir.mkdir()
    leaked_r, leaked_w = os.pipe()
    os.set_inheritable(leaked_w, True)  # inheritable here: still closed in the child
    try:
        env = {**os.environ, "SPAWN_PROBE": "seen"}
        script = tmp_path / "probe.py"
        script.write_text(PROBE)
        lines = _run([sys.executable, str(script)], workdir, env, tmp_path)
    finally:
        os.close(leaked_r)
        os.close(leaked_w)
    assert lines[0] == "True True"  # leader of its own session and group
    fds = [int(n) for n in lines[1].split()]
    assert leaked_w not in fds and all(fd <= 3 for fd in fds), fds  # 3: the listing itself
    assert Path(lines[2]) == workdir
    assert lines[3] == "seen"


def test_signals_python_ignores_are_back_to_default_in_the_child(tmp_path: Path) -> None:
    # A program that is not Python (which would ignore SIGPIPE again) shows what it inherited.
    assert signal.getsignal(signal.SIGPIPE) == signal.SIG_IGN
    status = _run(
        ["sh", "-c", "exec grep SigIgn /proc/self/status"], tmp_path, dict(os.environ), tmp_path
    )
    ignored = int(status[0].split()[1], 16)
    assert not ignored & (1 << (signal.SIGPIPE - 1)), status
    assert not ignored & (1 << (signal.SIGXFSZ - 1)), status


def test_a_relative_program_is_found_from_the_childs_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    workdir = tmp_path / "work"
    workdir.mkdir()
    tool = workdir / "tool.sh"
    tool.write_text("#!/bin/sh\necho from-workdir\n")
    tool.chmod(0o755)
    decoy = tmp_path / "tool.sh"  # what our own directory would find instead
    decoy.write_text("#!/bin/sh\necho from-parent\n")
    decoy.chmod(0o755)
    monkeypatch.chdir(tmp_path)
    assert _run(["./tool.sh"], workdir, dict(os.environ), tmp_path) == ["from-workdir"]


def test_a_bare_name_is_searched_in_the_childs_path(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    tool = bin_dir / "only-in-child-path"
    tool.write_text("#!/bin/sh\necho found\n")
    tool.chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}:/usr/bin:/bin"}
    assert _run(["only-in-child-path"], tmp_path, env, tmp_path) == ["found"]
    with pytest.raises(FileNotFoundError):  # not in this process's own PATH
        _start(["only-in-child-path"], tmp_path, dict(os.environ))


def test_a_missing_executable_is_file_not_found(tmp_path: Path) -> None:
    for argv in (["no-such-program-changeloop"], ["./no-such-program"]):
        with pytest.raises(FileNotFoundError):
            _start(argv, tmp_path, dict(os.environ))


def test_a_missing_working_directory_is_file_not_found(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        _start(["true"], tmp_path / "gone", dict(os.environ))


@pytest.mark.parametrize(
    ("argv", "extra", "cwd_name"),
    [
        (["true"], {"CUT": "before\0after"}, "work"),  # a C string would end at the NUL
        (["tr\0ue"], {}, "work"),
        (["true"], {"A=B": "1"}, "work"),
        (["true"], {}, "wo\0rk"),
    ],
    ids=["nul-in-value", "nul-in-argv", "equals-in-name", "nul-in-cwd"],
)
def test_what_a_c_string_cannot_carry_is_refused(
    argv: list[str], extra: dict[str, str], cwd_name: str, tmp_path: Path
) -> None:
    """Never silently cut short: ``ValueError`` naming what is wrong."""
    (tmp_path / "work").mkdir()
    with pytest.raises(ValueError, match=r"null byte|environment variable name"):
        _start(argv, tmp_path / cwd_name, {**os.environ, **extra})


def test_env_delta_is_the_difference_and_never_carries_an_env_from_value() -> None:
    base = {"A": "1", "B": "2", "SECRET": "old", "GONE": "x"}
    env = {"A": "1", "B": "changed", "NEW": "n", "SECRET": "s3cr3t-value"}
    values, unset = env_delta(env, base, ["SECRET"])
    assert values == (("B", "changed"), ("NEW", "n"))
    assert unset == ("GONE",)

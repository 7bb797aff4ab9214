"""``spawn.start_child``: ``posix_spawn`` only where it is exactly what ``Popen`` would do.

Each property is checked on a real child, started both ways (``posix_spawn``
when the command runs in this process's directory, ``Popen`` otherwise): its
own session, SIGPIPE back to default, no inherited descriptor beyond 0-2, the
environment and directory it was given, and a missing executable as
``FileNotFoundError``. ``environ()`` follows every change of ``os.environ``.
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

import pytest

from changeloop.run.job import env_delta
from changeloop.spawn import SpawnedChild, environ, start_child

PROBE = """\
import os
fds = sorted(int(n) for n in os.listdir("/proc/self/fd"))
print(os.getsid(0) == os.getpid(), os.getpgrp() == os.getpid())
print(" ".join(map(str, fds)))
print(os.getcwd())
print(os.environ.get("SPAWN_PROBE"))
"""


def _run(argv: list[str], cwd: Path, env: dict[str, str], tmp: Path) -> tuple[object, list[str]]:
    out = tmp / "out.txt"
    with out.open("wb") as sink, open(os.devnull, "rb") as devnull:
        child = start_child(
            argv,
            cwd=cwd,
            env=env,
            stdin=devnull.fileno(),
            stdout=sink.fileno(),
            stderr=sink.fileno(),
            parent_path=environ().get("PATH"),
        )
        assert child.wait() == 0, out.read_text()
    return child, out.read_text().splitlines()


@pytest.mark.parametrize("here", [True, False], ids=["posix_spawn", "popen"])
def test_both_ways_start_the_same_child(
    here: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    workdir = tmp_path / "work"
    workdir.mkdir()
    monkeypatch.chdir(workdir if here else tmp_path)
    leaked_r, leaked_w = os.pipe()
    os.set_inheritable(leaked_w, True)  # Popen closes it in the child; so must posix_spawn
    try:
        env = {**environ(), "SPAWN_PROBE": "seen"}
        script = tmp_path / "probe.py"
        script.write_text(PROBE)
        child, lines = _run([sys.executable, str(script)], workdir, env, tmp_path)
    finally:
        os.close(leaked_r)
        os.close(leaked_w)
    assert isinstance(child, SpawnedChild) is here  # the way taken is the one meant
    assert lines[0] == "True True"  # leader of its own session and group
    fds = [int(n) for n in lines[1].split()]
    assert leaked_w not in fds and all(fd <= 3 for fd in fds), fds  # 3: the listing itself
    assert Path(lines[2]) == workdir
    assert lines[3] == "seen"
    # Signals Python ignores for itself (SIGPIPE) are back to default in the child: a
    # program that is not Python (which would ignore it again) shows what it inherited.
    assert signal.getsignal(signal.SIGPIPE) == signal.SIG_IGN
    _child, status = _run(
        ["sh", "-c", "exec grep SigIgn /proc/self/status"], workdir, env, tmp_path
    )
    ignored = int(status[0].split()[1], 16)
    assert not ignored & (1 << (signal.SIGPIPE - 1)), status


def test_a_bare_name_is_spawned_only_with_this_process_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    same = dict(environ())
    child, _ = _run(["true"], tmp_path, same, tmp_path)
    assert isinstance(child, SpawnedChild)
    other = {**same, "PATH": "/usr/bin:/bin"}  # another search path: Popen searches it
    child, _ = _run(["true"], tmp_path, other, tmp_path)
    assert not isinstance(child, SpawnedChild)


@pytest.mark.parametrize("here", [True, False], ids=["posix_spawn", "popen"])
def test_a_missing_executable_is_file_not_found_either_way(
    here: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path if here else "/")
    with open(os.devnull, "r+b") as devnull, pytest.raises(FileNotFoundError):
        start_child(
            ["no-such-program-changeloop"],
            cwd=tmp_path,
            env=dict(environ()),
            stdin=devnull.fileno(),
            stdout=devnull.fileno(),
            stderr=devnull.fileno(),
            parent_path=environ().get("PATH"),
        )


def test_environ_follows_every_change_of_os_environ(monkeypatch: pytest.MonkeyPatch) -> None:
    first = environ()
    assert environ() is first  # unchanged: the same decoded mapping
    monkeypatch.setenv("CHANGELOOP_SPAWN_TEST", "one")
    assert environ()["CHANGELOOP_SPAWN_TEST"] == "one"
    monkeypatch.setenv("CHANGELOOP_SPAWN_TEST", "two")  # same keys, another value
    assert environ()["CHANGELOOP_SPAWN_TEST"] == "two"
    monkeypatch.delenv("CHANGELOOP_SPAWN_TEST")
    assert "CHANGELOOP_SPAWN_TEST" not in environ()
    with pytest.raises(TypeError):
        environ()["X"] = "y"  # type: ignore[index]  # shared: read-only


def test_env_delta_is_the_difference_and_never_carries_an_env_from_value() -> None:
    base = {"A": "1", "B": "2", "SECRET": "old", "GONE": "x"}
    env = {"A": "1", "B": "changed", "NEW": "n", "SECRET": "s3cr3t-value"}
    values, unset = env_delta(env, base, ["SECRET"])
    assert values == (("B", "changed"), ("NEW", "n"))
    assert unset == ("GONE",)

"""``spawn.start_child``: ``posix_spawn`` only where it is exactly what ``Popen`` would do.

Each property is checked on a real child, started every way: libc's
``posix_spawn`` (glibc: any working directory), ``os.posix_spawn`` (the
command runs in this process's directory) and ``Popen`` (otherwise): its own
session, SIGPIPE back to default, no inherited descriptor beyond 0-2, the
environment and directory it was given, a relative program found from that
directory, and a missing executable as ``FileNotFoundError``. ``environ()``
follows every change of ``os.environ``.
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

import pytest

from changeloop.executors.job import env_delta
from changeloop.process import spawn_libc
from changeloop.process.spawn import SpawnedChild, environ, start_child

# (way, runs in this process's directory, glibc's posix_spawn allowed)
WAYS = [
    pytest.param("libc", False, True, id="libc-sandbox"),
    pytest.param("libc", True, True, id="libc-here"),
    pytest.param("os", True, False, id="os-posix_spawn"),
    pytest.param("popen", False, False, id="popen"),
]


def _way(child: object) -> str:
    return child.via if isinstance(child, SpawnedChild) else "popen"


def _choose(
    monkeypatch: pytest.MonkeyPatch, libc: bool, here: Path, tmp_path: Path, same: bool
) -> None:
    if libc and not spawn_libc.AVAILABLE:  # pragma: no cover - CI runs on glibc
        pytest.skip("not glibc: libc's posix_spawn is not used here")
    if not libc:
        monkeypatch.setattr(spawn_libc, "AVAILABLE", False)
    monkeypatch.chdir(here if same else tmp_path)


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


@pytest.mark.parametrize(("way", "same", "libc"), WAYS)
def test_every_way_starts_the_same_child(
    way: str, same: bool, libc: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    workdir = tmp_path / "work"
    workdir.mkdir()
    _choose(monkeypatch, libc, workdir, tmp_path, same)
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
    assert _way(child) == way  # the way taken is the one meant
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


@pytest.mark.parametrize(("way", "same", "libc"), WAYS)
def test_a_relative_program_is_found_from_the_childs_directory(
    way: str, same: bool, libc: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    workdir = tmp_path / "work"
    workdir.mkdir()
    tool = workdir / "tool.sh"
    tool.write_text("#!/bin/sh\necho from-workdir\n")
    tool.chmod(0o755)
    decoy = tmp_path / "tool.sh"  # what our own directory would find instead
    decoy.write_text("#!/bin/sh\necho from-parent\n")
    decoy.chmod(0o755)
    _choose(monkeypatch, libc, workdir, tmp_path, same)
    child, lines = _run(["./tool.sh"], workdir, dict(environ()), tmp_path)
    assert _way(child) == way
    assert lines == ["from-workdir"]


@pytest.mark.parametrize("libc", [True, False], ids=["libc", "os"])
def test_a_bare_name_is_spawned_only_with_this_process_path(
    libc: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _choose(monkeypatch, libc, tmp_path, tmp_path, True)
    same = dict(environ())
    child, _ = _run(["true"], tmp_path, same, tmp_path)
    assert _way(child) == ("libc" if libc else "os")
    other = {**same, "PATH": "/usr/bin:/bin"}  # another search path: Popen searches it
    child, _ = _run(["true"], tmp_path, other, tmp_path)
    assert _way(child) == "popen"


@pytest.mark.parametrize(("way", "same", "libc"), WAYS)
def test_a_missing_executable_is_file_not_found_every_way(
    way: str,  # noqa: ARG001 - the id says which way; the error is the same
    same: bool,
    libc: bool,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    workdir = tmp_path / "work"
    workdir.mkdir()
    _choose(monkeypatch, libc, workdir, tmp_path, same)
    for argv in (["no-such-program-changeloop"], ["./no-such-program"]):
        with open(os.devnull, "r+b") as devnull, pytest.raises(FileNotFoundError):
            start_child(
                argv,
                cwd=workdir,
                env=dict(environ()),
                stdin=devnull.fileno(),
                stdout=devnull.fileno(),
                stderr=devnull.fileno(),
                parent_path=environ().get("PATH"),
            )


@pytest.mark.parametrize("libc", [True, False], ids=["libc", "popen"])
def test_a_missing_working_directory_is_an_os_error_either_way(
    libc: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _choose(monkeypatch, libc, tmp_path, tmp_path, True)
    with open(os.devnull, "r+b") as devnull, pytest.raises(FileNotFoundError):
        start_child(
            ["true"],
            cwd=tmp_path / "gone",
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


@pytest.mark.parametrize(("way", "same", "libc"), WAYS)
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
def test_what_a_c_string_cannot_carry_is_refused_every_way(
    way: str,  # noqa: ARG001 - the id says which way; the refusal is the same
    same: bool,
    libc: bool,
    argv: list[str],
    extra: dict[str, str],
    cwd_name: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Never silently cut short: ``ValueError``, as ``os.posix_spawn`` and ``Popen`` raise."""
    workdir = tmp_path / "work"
    workdir.mkdir()
    _choose(monkeypatch, libc, workdir, tmp_path, same and cwd_name == "work")
    with open(os.devnull, "r+b") as devnull, pytest.raises(ValueError):
        start_child(
            argv,
            cwd=tmp_path / cwd_name,
            env={**environ(), **extra},
            stdin=devnull.fileno(),
            stdout=devnull.fileno(),
            stderr=devnull.fileno(),
            parent_path=environ().get("PATH"),
        )

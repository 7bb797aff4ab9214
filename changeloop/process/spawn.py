"""Starting one child in a session of its own: ``posix_spawn`` where the command allows it.

``subprocess.Popen`` costs about twice the parent's CPU of ``posix_spawn`` per
command (its Python side encodes the environment variable by variable and
reads an error pipe; bench/README.md "Scheduler"). So :func:`start_child`
calls ``posix_spawn`` itself when that is exactly what ``Popen(argv, cwd=cwd,
env=env, start_new_session=True, stdin=…, stdout=…, stderr=…)`` would do:

- the executable is found the way ``Popen`` finds it: a path (with a ``/``) is
  used as it is; a bare name is searched by ``posix_spawnp`` in this process's
  ``PATH``, so only when the child's ``PATH`` is the same;
- file descriptors: ``Popen`` closes every descriptor above 2 in the child;
- signals: ``Popen`` resets SIGPIPE and SIGXFSZ (which Python ignores) to
  their defaults in the child; so do we (``setsigdef``).

With glibc, ``spawn_libc`` calls libc's ``posix_spawn`` directly: it changes
the working directory (a sandbox's), closes every descriptor above 2 and
releases the GIL while the child starts. Elsewhere ``os.posix_spawn`` does it
when the command runs in this process's own directory (it cannot change it),
closing each inheritable descriptor by a file action (Python makes its own
close-on-exec). Otherwise ``Popen`` starts it. All return something with
``pid``, ``returncode``, ``poll()`` and ``wait()``.
"""

from __future__ import annotations

import errno
import os
import signal
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import Protocol

from changeloop.process import spawn_libc

__all__ = ["Child", "SpawnedChild", "environ", "start_child"]

_RESET_SIGNALS = tuple(
    sig for sig in (getattr(signal, n, None) for n in ("SIGPIPE", "SIGXFSZ")) if sig is not None
)
_CAN_SPAWN = hasattr(os, "posix_spawn") and hasattr(os, "POSIX_SPAWN_DUP2")


class Child(Protocol):
    """What the process layer needs of a started child (``Popen`` has it too)."""

    pid: int

    @property
    def returncode(self) -> int | None: ...

    def poll(self) -> int | None: ...

    def wait(self) -> int: ...


class SpawnedChild:
    """A child started with ``posix_spawn`` (``via`` libc or ``os``): reaped with ``waitpid``."""

    def __init__(self, pid: int, via: str) -> None:
        self.pid = pid
        self.via = via
        self._returncode: int | None = None

    @property
    def returncode(self) -> int | None:
        return self._returncode

    def poll(self) -> int | None:
        if self._returncode is None:
            self._reap(os.WNOHANG)
        return self._returncode

    def wait(self) -> int:
        while self._returncode is None:
            self._reap(0)
        return self._returncode

    def _reap(self, flags: int) -> None:
        try:
            pid, status = os.waitpid(self.pid, flags)
        except ChildProcessError:  # reaped elsewhere (SIGCHLD set to be ignored): status lost
            self._returncode = 0 if self._returncode is None else self._returncode
            return
        if pid == self.pid:
            self._returncode = os.waitstatus_to_exitcode(status)


def start_child(
    argv: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    stdin: int,
    stdout: int,
    stderr: int,
    parent_path: str | None,
) -> Child:
    """Start ``argv`` as the leader of a new session; ``OSError`` when it cannot start.

    ``parent_path`` is this process's own ``PATH`` (a snapshot the caller holds).
    """
    stdio = (stdin, stdout, stderr)
    program = _program(argv, env, parent_path)
    if program is None or min(stdio) <= 2:  # dup2 onto itself: Popen handles it
        return _popen(argv, cwd, env, stdio)
    if spawn_libc.AVAILABLE:
        pid = spawn_libc.spawn(
            program, argv, env, cwd=str(cwd), stdio=stdio, search_path="/" not in program
        )
        return SpawnedChild(pid, via="libc")
    if not _CAN_SPAWN or os.path.abspath(cwd) != os.getcwd():  # noqa: PTH100, PTH109
        return _popen(argv, cwd, env, stdio)  # os.posix_spawn cannot change directory
    actions: list[tuple[int, ...]] = [
        (os.POSIX_SPAWN_DUP2, stdin, 0),
        (os.POSIX_SPAWN_DUP2, stdout, 1),
        (os.POSIX_SPAWN_DUP2, stderr, 2),
    ]
    actions += [(os.POSIX_SPAWN_CLOSE, fd) for fd in _inheritable_fds()]
    spawn = os.posix_spawnp if "/" not in program else os.posix_spawn
    try:
        pid = spawn(
            program,
            list(argv),
            env,
            file_actions=actions,
            setsid=True,
            setsigdef=_RESET_SIGNALS,
        )
    except OSError as exc:
        if exc.errno != errno.EBADF:
            raise
        # A descriptor listed to be closed was closed meanwhile: Popen closes them all.
        return _popen(argv, cwd, env, stdio)
    return SpawnedChild(pid, via="os")


def _popen(
    argv: Sequence[str], cwd: Path, env: Mapping[str, str], stdio: tuple[int, int, int]
) -> Child:
    stdin, stdout, stderr = stdio
    return subprocess.Popen(
        list(argv),
        cwd=cwd,
        env=env,
        stdin=stdin,
        stdout=stdout,
        stderr=stderr,
        start_new_session=True,
    )


def _program(argv: Sequence[str], env: Mapping[str, str], parent_path: str | None) -> str | None:
    """The program to hand to ``posix_spawn[p]``, or None when only ``Popen`` finds it exactly.

    A path is used as it is; a bare name is searched in this process's ``PATH``
    by ``posix_spawnp``, which is ``Popen``'s search only when the child's
    ``PATH`` is the same.
    """
    if not argv:
        return None
    program = str(argv[0])
    if "/" not in program and (parent_path is None or env.get("PATH") != parent_path):
        return None
    return program


def _inheritable_fds() -> list[int]:
    """Descriptors above 2 a child would inherit (``Popen`` closes them; so must we)."""
    try:
        names = os.listdir("/proc/self/fd")  # noqa: PTH208 - per spawn, kept cheap
    except OSError:  # pragma: no cover - no /proc
        return []
    found = []
    for name in names:
        fd = int(name)
        if fd > 2:
            try:
                if os.get_inheritable(fd):
                    found.append(fd)
            except OSError:  # the directory's own descriptor, closed by now
                continue
    return found


_ENVIRON: list[tuple[dict[bytes, bytes], Mapping[str, str]]] = []  # (raw copy, decoded view)


def environ() -> Mapping[str, str]:
    """``os.environ`` as a read-only plain mapping, decoded once for as long as it is unchanged.

    Every job of a run starts from the process environment; reading
    ``os.environ`` decodes each variable on each access, which a run of many
    providers paid several times per job. The raw bytes are compared (one C-level
    dict comparison) so a change to ``os.environ`` is always seen.
    """
    raw: dict[bytes, bytes] = os.environ._data  # type: ignore[attr-defined]
    last = _ENVIRON[0] if _ENVIRON else None  # one read: another thread may replace it
    if last is not None and last[0] == raw:
        return last[1]
    made = (dict(raw), MappingProxyType(dict(os.environ)))
    _ENVIRON[:] = [made]
    return made[1]

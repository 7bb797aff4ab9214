"""Named resources held across processes on this host: one lock file per name.

Workspace locks (``workspace-read:``/``workspace-write:``) are a run's own;
every other named resource (``database:test``, ``browser:web``, ``port:4173``)
is held host-wide while a provider runs, and a service holds ``port:<n>`` from
its port check until it has stopped, so two proves — of one change or of two,
from one checkout or two — never hold it at once: the second waits.

A lock is ``flock`` on ``<dir>/<name>.lock`` under the user's runtime
directory (``$XDG_RUNTIME_DIR/changeloop/locks/``; without one,
``/tmp/changeloop-<uid>/locks/``, made 0700 and refused unless it is the
user's own). The kernel lets go of it when its holder exits, kill -9 included,
so a crashed run never leaves a resource taken. ``flock`` belongs to the open
file, so two holders inside one process exclude each other too. The holder
writes its pid into the file (for a person looking); nothing reads it back.

    async with hold(["database:test"], on_wait=lambda name: print("waiting for", name)):
        ...   # no other process on this host holds database:test meanwhile
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
import stat
import time
from collections.abc import AsyncIterator, Callable, Iterable
from pathlib import Path

import anyio

from changeloop.errors import ChangeloopError, Problem

__all__ = ["HostLock", "acquire", "hold", "lock_dir"]

_POLL_FIRST_S = 0.01
_POLL_MAX_S = 0.2


def lock_dir() -> Path:
    """The directory of this user's lock files (made on first use); refused if not ours."""
    runtime = Path(os.environ.get("XDG_RUNTIME_DIR") or "relative")
    if runtime.is_absolute() and runtime.is_dir():
        base = runtime / "changeloop"
    else:  # one well-known place for every process of the user, whatever its TMPDIR
        base = Path("/tmp") / f"changeloop-{os.getuid()}"  # noqa: S108 - made private or refused
    _private_dir(base)
    locks = base / "locks"
    _private_dir(locks)
    return locks


def _private_dir(path: Path) -> None:
    """``path`` as a directory only this user can enter: made so, or refused."""
    with contextlib.suppress(FileExistsError):
        path.mkdir(mode=0o700)
    info = path.lstat()
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o077:
        raise ChangeloopError(
            Problem(
                code="lock_dir_refused",
                message=f"{path} is not a private directory of this user (another user could"
                " hold or fake the locks changeloop shares between its runs there)",
                fix=f"remove {path} (changeloop makes it again, mode 0700), or set"
                " XDG_RUNTIME_DIR to a directory of your own",
            ),
            exit_code=2,
        )


def _file_name(name: str) -> str:
    readable = re.sub(r"[^A-Za-z0-9_.-]", "_", name)[:60]
    digest = hashlib.sha256(name.encode("utf-8", "surrogateescape")).hexdigest()[:12]
    return f"{readable}-{digest}.lock"


class HostLock:
    """One held lock file; :meth:`release` (or the process's end) lets go of it."""

    def __init__(self, name: str, fd: int) -> None:
        self.name = name
        self._fd: int | None = fd

    def release(self) -> None:
        if self._fd is not None:
            fd, self._fd = self._fd, None
            with contextlib.suppress(OSError):
                os.ftruncate(fd, 0)  # nobody holds it: no stale "held by"
            os.close(fd)  # closing the open file drops its flock


def _try(name: str, directory: Path) -> HostLock | None:
    path = directory / _file_name(name)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    except BaseException:
        os.close(fd)
        raise
    who = {"resource": name, "pid": os.getpid(), "since": time.time()}
    with contextlib.suppress(OSError):
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(who).encode(), 0)
    return HostLock(name, fd)


async def acquire(name: str, on_wait: Callable[[str], None] | None = None) -> HostLock:
    """Take the host-wide lock ``name``, waiting (cancellably) while another holds it."""
    directory = lock_dir()
    delay = _POLL_FIRST_S
    told = False
    while True:
        lock = _try(name, directory)
        if lock is not None:
            return lock
        if not told and on_wait is not None:
            on_wait(name)
            told = True
        await anyio.sleep(delay)
        delay = min(delay * 2, _POLL_MAX_S)


@contextlib.asynccontextmanager
async def hold(
    names: Iterable[str], on_wait: Callable[[str], None] | None = None
) -> AsyncIterator[None]:
    """Hold every one of ``names`` (taken in sorted order: no two holders wait on each other)."""
    held: list[HostLock] = []
    try:
        for name in sorted(set(names)):
            held.append(await acquire(name, on_wait))
        yield
    finally:
        for lock in reversed(held):
            lock.release()

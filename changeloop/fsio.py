"""Files on disk without surprises: exclusive atomic writes and bounded regular reads.

Writes never follow a planted symlink (DESIGN.md §2.6): each file is first
written to a temporary file created *exclusively* (``O_CREAT|O_EXCL|
O_NOFOLLOW``) in the destination directory, then renamed over the name — a
rename replaces a symlink standing at the name instead of writing through it.
Durability follows DESIGN.md §13: write all, fsync all, rename all, fsync the
directory, so a kill -9 leaves the old file or the new one, never half of one.

Reads of files that wiring names (keys, reports, contracts) go through
:func:`read_regular`: it opens without blocking (a FIFO cannot hang a run),
insists on a regular file (``/dev/zero`` cannot grow memory) and reads at most
``limit`` bytes.

Usage::

    write_atomic(path, data)                       # one file
    write_all([(a, data_a), (b, data_b)])          # a batch, one fsync round
    create_new(key_path, pem, mode=0o600)          # never over an existing name
    data = read_regular(path, limit=64 * KIB, what="public key")
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from collections.abc import Iterable, Sequence
from pathlib import Path

from changeloop.errors import FileRefused

__all__ = [
    "KIB",
    "MIB",
    "create_new",
    "read_regular",
    "read_regular_stat",
    "symlink_under",
    "write_all",
    "write_atomic",
]

KIB = 1024
MIB = 1024 * KIB
_TEMP_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


def _exclusive_temp(directory: Path, name: str, mode: int) -> tuple[int, Path]:
    """A fresh temporary file beside ``name``; never an existing file or a symlink."""
    for _attempt in range(16):
        tmp = directory / f".{name}.{os.getpid()}.{secrets.token_hex(6)}.tmp"
        try:
            fd = os.open(tmp, _TEMP_FLAGS, mode)
        except FileExistsError:  # taken (or planted): pick another name
            continue
        except OSError as exc:  # name the file the caller asked for, not our temporary
            raise OSError(exc.errno, exc.strerror, str(directory / name)) from exc
        return fd, tmp
    raise FileExistsError(errno.EEXIST, "no free temporary name", str(directory / name))


def _write_fd(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def fsync_dir(directory: Path) -> None:
    """Make renames in ``directory`` durable (best effort where directories cannot be opened)."""
    try:
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def write_all(
    items: Sequence[tuple[Path, bytes]], *, mode: int = 0o644, durable: bool = True
) -> None:
    """Write every ``(path, data)``: write all, fsync all, rename all, fsync the directories.

    Parent directories must exist. On any error no temporary file is left and
    no name has changed that was not already renamed.
    """
    temps: list[tuple[int | None, Path, Path]] = []
    try:
        for path, data in items:
            new_fd, tmp = _exclusive_temp(path.parent, path.name, mode)
            temps.append((new_fd, tmp, path))
            if mode & 0o077 == 0:
                os.fchmod(new_fd, mode)  # a private file is private whatever the umask
            _write_fd(new_fd, data)
        for index, (open_fd, tmp, path) in enumerate(temps):
            assert open_fd is not None
            if durable:
                os.fsync(open_fd)
            os.close(open_fd)
            temps[index] = (None, tmp, path)
        for index, (_closed, tmp, path) in enumerate(temps):
            tmp.replace(path)
            temps[index] = (None, path, path)  # renamed: nothing left to clean
    except BaseException:
        for left_fd, tmp, path in temps:
            if left_fd is not None:
                os.close(left_fd)
            if tmp != path:
                _unlink_quietly(tmp)
        raise
    if durable:
        for directory in _distinct(path.parent for path, _data in items):
            fsync_dir(directory)


def write_atomic(path: Path, data: bytes, *, mode: int = 0o644, durable: bool = True) -> None:
    """Replace ``path`` with ``data`` all at once (creating its parent directories)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    write_all([(path, data)], mode=mode, durable=durable)


def create_new(path: Path, data: bytes, *, mode: int = 0o600) -> None:
    """Create ``path`` holding ``data``; FileExistsError if anything (even a symlink) is there.

    The file is complete and fsynced before its name appears (a hard link of
    the temporary file), so a reader never sees a half key.
    """
    fd, tmp = _exclusive_temp(path.parent, path.name, mode)
    try:
        os.fchmod(fd, mode)
        _write_fd(fd, data)
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        _unlink_quietly(tmp)
        raise
    os.close(fd)
    try:
        os.link(tmp, path, follow_symlinks=False)  # fails with EEXIST, never follows
    finally:
        _unlink_quietly(tmp)
    fsync_dir(path.parent)


def read_regular_stat(
    path: Path, *, limit: int, what: str, follow_symlinks: bool = True
) -> tuple[bytes, os.stat_result]:
    """:func:`read_regular`, also returning the opened file's status (mode bits, owner)."""
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
    if not follow_symlinks:
        flags |= os.O_NOFOLLOW
    try:
        fd = os.open(path, flags)
    except FileNotFoundError as exc:
        raise FileRefused(path, what, "does not exist", missing=True) from exc
    except OSError as exc:
        if exc.errno == errno.ELOOP and not follow_symlinks:
            raise FileRefused(path, what, "is a symlink, not a regular file") from exc
        raise FileRefused(path, what, f"cannot be read: {exc.strerror or exc}") from exc
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise FileRefused(path, what, f"is {_kind(info.st_mode)}, not a regular file")
        if info.st_size > limit:
            raise FileRefused(path, what, f"is larger than {_size(limit)} ({_size(info.st_size)})")
        chunks: list[bytes] = []
        total = 0
        while True:
            chunk = os.read(fd, min(1 * MIB, limit + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
            if total > limit:  # grew while we read it (or lies about its size)
                raise FileRefused(path, what, f"is larger than {_size(limit)}")
        return b"".join(chunks), info
    except OSError as exc:
        raise FileRefused(path, what, f"cannot be read: {exc.strerror or exc}") from exc
    finally:
        os.close(fd)


def read_regular(path: Path, *, limit: int, what: str) -> bytes:
    """The bytes of the regular file ``path`` (at most ``limit``); else :class:`FileRefused`.

    ``what`` names the file in the refusal ("public key", "report"…). A FIFO,
    a device or a directory is refused without blocking on it.
    """
    return read_regular_stat(path, limit=limit, what=what)[0]


def symlink_under(path: Path, base: Path) -> Path | None:
    """The first of ``path`` and its parents below ``base`` that is a symlink, or None."""
    try:
        relative = path.relative_to(base)
    except ValueError:
        return None
    current = base
    for part in relative.parts:
        current = current / part
        if current.is_symlink():
            return current
    return None


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def _size(count: int) -> str:
    if count >= MIB:
        return f"{count / MIB:.0f} MiB"
    if count >= KIB:
        return f"{count / KIB:.0f} KiB"
    return f"{count} bytes"


def _distinct(paths: Iterable[Path]) -> list[Path]:
    return list(dict.fromkeys(paths))


def _unlink_quietly(path: Path) -> None:
    with contextlib.suppress(OSError):
        path.unlink()

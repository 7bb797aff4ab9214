"""Exclusive atomic writes: never through a planted symlink, never half a file.

Writes never follow a planted symlink (docs/threat-model.md): each file is first
written to a temporary file created *exclusively* (``O_CREAT|O_EXCL|
O_NOFOLLOW``) in the destination directory, then renamed over the name — a
rename replaces a symlink standing at the name instead of writing through it.
Durability follows docs/design.md: every file of a round is written and fsynced,
then every name is renamed, then each directory is fsynced once; a kill -9
leaves the old file or the new one, never half of one.
"""

from __future__ import annotations

import contextlib
import errno
import os
import random
import shutil
import stat
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "Pending",
    "commit",
    "create_new",
    "fsync_dir",
    "write_all",
    "write_atomic",
    "write_fd",
]

TEMP_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
# Tokens of temporary names. Their safety is O_EXCL|O_NOFOLLOW (a taken or planted name
# is skipped), not secrecy.
TEMP_NAMES = random.Random()  # noqa: S311 - names, not secrets


def _exclusive_temp(directory: str, name: str, mode: int) -> tuple[int, str]:
    """A fresh temporary file beside ``name``; never an existing file or a symlink.

    Paths are plain strings here: a round handles thousands of files on the
    writer thread, and every ``Path`` built there was Python run under the GIL
    the event loop needs.
    """
    for _attempt in range(16):
        token = f"{TEMP_NAMES.getrandbits(48):012x}"
        tmp = os.path.join(directory, f".{name}.{os.getpid()}.{token}.tmp")  # noqa: PTH118 - strings on the writer thread
        try:
            fd = os.open(tmp, TEMP_FLAGS, mode)
        except FileExistsError:  # taken (or planted): pick another name
            continue
        except OSError as exc:  # name the file the caller asked for, not our temporary
            raise OSError(exc.errno, exc.strerror, os.path.join(directory, name)) from exc  # noqa: PTH118
        return fd, tmp
    where = os.path.join(directory, name)  # noqa: PTH118
    raise FileExistsError(errno.EEXIST, "no free temporary name", where)


def write_fd(fd: int, data: bytes) -> None:
    """All of ``data`` to ``fd`` (``os.write`` may take only part of it)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


@dataclass(frozen=True)
class Pending:
    """One file of a batch: where it goes, its bytes, and whether it must outlive a power cut.

    ``durable=False`` is for bytes whose loss costs nothing but a re-run (a cache
    entry, a copy of bytes already durable elsewhere): the rename still makes the
    write all-or-nothing for a killed process, only the fsyncs are skipped.

    ``path`` may be a plain string: a run's writer stages thousands, and the
    writer thread works on strings anyway.
    """

    path: str | Path
    data: bytes
    durable: bool = True
    mode: int = 0o644
    # A directory standing at ``path`` is damaged state of ours: removed, then renamed over.
    displace_dir: bool = False


@dataclass
class _Staged:
    item: Pending
    target: str  # str(item.path), made once
    directory: str  # its parent directory
    tmp: str
    fd: int | None


def commit(
    groups: Sequence[Sequence[Pending]], *, made: set[str] | None = None
) -> list[OSError | None]:
    """Write every group's files in one round: write all, fsync all, rename all, fsync each
    directory once (docs/design.md). Returns each group's first error (None: all renamed).

    Parent directories are made (``made`` remembers those known to exist, as strings). A group
    that fails leaves no temporary file and keeps the names it had already renamed;
    the other groups are not affected. A kill at any instant leaves every name
    either its old file or its new one, plus temporary files that name this
    process (``sweep.sweep`` removes them once it is gone).
    """
    known = made if made is not None else set()
    errors: list[OSError | None] = [None] * len(groups)
    staged: list[list[_Staged]] = [[] for _ in groups]
    try:
        for index, group in enumerate(groups):
            try:
                for item in group:
                    target = os.fspath(item.path)
                    directory, name = os.path.split(target)
                    _ensure_dir(directory, known)
                    fd, tmp = _exclusive_temp(directory, name, item.mode)
                    entry = _Staged(item, target, directory, tmp, fd)
                    staged[index].append(entry)
                    _fill(entry)
            except OSError as exc:
                errors[index] = _naming(exc, item.path)
                _discard(staged[index])
        renamed: list[_Staged] = []
        for index, files in enumerate(staged):
            while files:
                entry = files[0]
                try:
                    _rename(entry)
                except OSError as exc:
                    errors[index] = _naming(exc, entry.item.path)
                    _discard(files)
                    break
                files.pop(0)
                renamed.append(entry)
    finally:  # an exception we did not expect (KeyboardInterrupt): no temporary stays
        for files in staged:
            _discard(files)
    for directory in dict.fromkeys(e.directory for e in renamed if e.item.durable):
        fsync_dir(directory)
    return errors


def write_all(
    items: Sequence[tuple[Path, bytes]], *, mode: int = 0o644, durable: bool = True
) -> None:
    """Write every ``(path, data)``: write all, fsync all, rename all, fsync the directories.

    Parent directories must exist. On any error no temporary file is left and
    no name has changed that was not already renamed.
    """
    group = [Pending(path, data, durable, mode) for path, data in items]
    (error,) = commit([group], made={os.fspath(path.parent) for path, _data in items})
    if error is not None:
        raise error


def write_atomic(path: Path, data: bytes, *, mode: int = 0o644, durable: bool = True) -> None:
    """Replace ``path`` with ``data`` all at once (creating its parent directories)."""
    (error,) = commit([[Pending(path, data, durable, mode)]])
    if error is not None:
        raise error


def create_new(path: Path, data: bytes, *, mode: int = 0o600) -> None:
    """Create ``path`` holding ``data``; FileExistsError if anything (even a symlink) is there.

    The file is complete and fsynced before its name appears (a hard link of
    the temporary file), so a reader never sees a half key.
    """
    fd, tmp = _exclusive_temp(os.fspath(path.parent), path.name, mode)
    try:
        os.fchmod(fd, mode)
        write_fd(fd, data)
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


def _fill(entry: _Staged) -> None:
    """Write the temporary file's bytes, fsync them when durable, and close it."""
    fd = entry.fd
    assert fd is not None
    if entry.item.mode & 0o077 == 0:
        os.fchmod(fd, entry.item.mode)  # a private file is private whatever the umask
    write_fd(fd, entry.item.data)
    if entry.item.durable:
        os.fsync(fd)
    entry.fd = None
    os.close(fd)


def fsync_dir(directory: str | Path) -> None:
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


def _rename(entry: _Staged) -> None:
    try:
        os.replace(entry.tmp, entry.target)  # noqa: PTH105 - strings made once per file
    except OSError as exc:
        squatted = exc.errno in (errno.EISDIR, errno.ENOTEMPTY, errno.EEXIST)
        if not (squatted and entry.item.displace_dir and _is_real_dir(entry.target)):
            raise
        shutil.rmtree(entry.target, ignore_errors=True)
        os.replace(entry.tmp, entry.target)  # noqa: PTH105


def _is_real_dir(path: str) -> bool:
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)  # never a symlink to one
    except OSError:
        return False


def _ensure_dir(directory: str, made: set[str]) -> None:
    """``Path(directory).mkdir(parents=True, exist_ok=True)``, on the string the round has."""
    if directory not in made:
        try:
            os.mkdir(directory)  # noqa: PTH102
        except FileNotFoundError:
            os.makedirs(directory, exist_ok=True)  # noqa: PTH103
        except OSError:
            if not os.path.isdir(directory):  # noqa: PTH112
                raise
        made.add(directory)


def _naming(exc: OSError, path: str | Path) -> OSError:
    """``exc`` naming the file the caller asked for (a failed write or fsync names none)."""
    if exc.filename is not None:
        return exc
    return type(exc)(exc.errno, exc.strerror or str(exc), str(path))


def _discard(files: list[_Staged]) -> None:
    """Close and remove temporaries not yet renamed; the list is emptied."""
    for entry in files:
        if entry.fd is not None:
            with contextlib.suppress(OSError):
                os.close(entry.fd)
            entry.fd = None
        _unlink_quietly(entry.tmp)
    files.clear()


def _unlink_quietly(path: str) -> None:
    with contextlib.suppress(OSError):
        os.unlink(path)  # noqa: PTH108 - temporaries are strings

"""Exclusive atomic writes: never through a planted symlink, never half a file.

Writes never follow a planted symlink (DESIGN.md §2.6): each file is first
written to a temporary file created *exclusively* (``O_CREAT|O_EXCL|
O_NOFOLLOW``) in the destination directory, then renamed over the name — a
rename replaces a symlink standing at the name instead of writing through it.
Durability follows DESIGN.md §13 (see :mod:`changeloop.fsio.durability`): a
kill -9 leaves the old file or the new one, never half of one.
"""

from __future__ import annotations

import contextlib
import errno
import os
import random
import shutil
import stat
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from changeloop.fsio import durability

__all__ = [
    "Pending",
    "commit",
    "create_new",
    "write_all",
    "write_atomic",
    "write_fd",
]

TEMP_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
# Tokens of temporary names. Their safety is O_EXCL|O_NOFOLLOW (a taken or planted name
# is skipped), not secrecy: a generator seeded once from os.urandom, where secrets made a
# getrandom system call per file (a GIL hand-off on the writer thread, issue 15).
TEMP_NAMES = random.Random()  # noqa: S311 - names, not secrets
# Files of a round held open between their write and their fsync (bounded descriptors).
SETTLE_CHUNK = 64


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
    # A later write of the same name in the same round may stand for this one (a cache
    # entry: losing it costs a re-run, never a receipt).
    supersedable: bool = False


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
    directory once (DESIGN.md §13). Returns each group's first error (None: all renamed).

    A round of :data:`durability.SYNCFS_FROM` durable files or more replaces the fsyncs with
    one ``syncfs`` per file system before the renames and one after (Linux): the
    same order, one pass over the disk each (see :func:`durability.whole_filesystem_sync`).

    A supersedable name several groups of the round write is written once, with
    the last group's bytes (a thousand providers sharing one cache entry create
    one file, not a thousand: on ext4, making and dropping inodes at that rate
    was what a round cost most).

    Parent directories are made (``made`` remembers those known to exist, as strings). A group
    that fails leaves no temporary file and keeps the names it had already renamed;
    the other groups are not affected. A kill at any instant leaves every name
    either its old file or its new one, plus temporary files that name this
    process (``sweep.sweep`` removes them once it is gone).
    """
    known = made if made is not None else set()
    errors: list[OSError | None] = [None] * len(groups)
    staged: list[list[_Staged]] = [[] for _ in groups]
    # A supersedable name written again later in the round is written only then: what the
    # earlier write would have put there is replaced within the same round anyway.
    last = {
        os.fspath(item.path): (g, i)
        for g, group in enumerate(groups)
        for i, item in enumerate(group)
        if item.supersedable
    }
    durable = sum(
        1
        for g, group in enumerate(groups)
        for i, item in enumerate(group)
        if item.durable and (not item.supersedable or last[os.fspath(item.path)] == (g, i))
    )
    # A large round is made durable by one syncfs per file system (Linux), a small
    # one file by file: see durability.whole_filesystem_sync.
    sync = durability.whole_filesystem_sync() if durable >= durability.SYNCFS_FROM else None
    written: list[tuple[int, _Staged]] = []  # written, not yet fsynced and closed
    try:
        for index, group in enumerate(groups):
            try:
                for position, item in enumerate(group):
                    target = os.fspath(item.path)
                    if item.supersedable and last[target] != (index, position):
                        continue  # superseded within this round
                    directory, name = os.path.split(target)
                    _ensure_dir(directory, known)
                    fd, tmp = _exclusive_temp(directory, name, item.mode)
                    entry = _Staged(item, target, directory, tmp, fd)
                    staged[index].append(entry)
                    _fill(entry, writeback=sync is None)
                    written.append((index, entry))
            except OSError as exc:
                errors[index] = _naming(exc, item.path)
                _discard(staged[index])
            if len(written) >= SETTLE_CHUNK:
                _settle(written, staged, errors, fsync=sync is None)
        _settle(written, staged, errors, fsync=sync is None)
        filesystems: list[str | Path] = []  # one directory on each file system written to
        if sync is not None:
            found = durability.one_per_filesystem(
                e.directory for files in staged for e in files if e.item.durable
            )
            if isinstance(found, OSError):
                failure: OSError | None = found
            else:
                filesystems, failure = found, durability.sync_each(sync, found)
            if failure is not None:  # what was written may not be on disk: rename nothing
                for index, files in enumerate(staged):
                    if files:  # each group's error names its own file
                        path = str(files[0].item.path)
                        errors[index] = type(failure)(failure.errno, failure.strerror, path)
                        _discard(files)
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
    directories = _distinct(entry.directory for entry in renamed if entry.item.durable)
    if sync is not None:
        if directories:  # on the file systems found before the renames: no stat per directory
            durability.sync_each(sync, filesystems)  # best effort, as fsync_dir is
    else:
        for directory in directories:
            durability.fsync_dir(directory)
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
    durability.fsync_dir(path.parent)


def _distinct(paths: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(paths))


def _fill(entry: _Staged, *, writeback: bool) -> None:
    """Write the temporary file's bytes (and start their writeback); the file stays open.

    Starting every file's writeback before the first fsync puts the block
    allocations of the whole chunk under way together, so the chunk's fsyncs
    mostly wait for writes already started (halved a 100-file round's time here).
    """
    fd = entry.fd
    assert fd is not None
    if entry.item.mode & 0o077 == 0:
        os.fchmod(fd, entry.item.mode)  # a private file is private whatever the umask
    write_fd(fd, entry.item.data)
    if writeback and entry.item.durable and durability.WRITEBACK is not None:
        with contextlib.suppress(OSError):  # only a hint: the fsync below is what counts
            os.posix_fadvise(fd, 0, 0, durability.WRITEBACK)


def _settle(
    written: list[tuple[int, _Staged]],
    staged: list[list[_Staged]],
    errors: list[OSError | None],
    *,
    fsync: bool,
) -> None:
    """fsync (when durable and asked) and close every written file; a failure fails its group."""
    for index, entry in written:
        fd = entry.fd
        if fd is None:  # its group failed meanwhile and was discarded
            continue
        try:
            if fsync and entry.item.durable:
                os.fsync(fd)
        except OSError as exc:
            errors[index] = _naming(exc, entry.item.path)
            _discard(staged[index])
            continue
        entry.fd = None
        os.close(fd)
    written.clear()


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

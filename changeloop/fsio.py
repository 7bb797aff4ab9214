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
    commit([[Pending(a, data_a)], [Pending(b, data_b, durable=False)]])  # groups, errors back
    create_new(key_path, pem, mode=0o600)          # never over an existing name
    data = read_regular(path, limit=64 * KIB, what="public key")
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import shutil
import stat
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from changeloop.errors import FileRefused

__all__ = [
    "KIB",
    "MIB",
    "Pending",
    "commit",
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
# Files of a round held open between their write and their fsync (bounded descriptors).
SETTLE_CHUNK = 64
# From this many durable files a round syncs whole file systems instead of each file.
SYNCFS_FROM = 16
# POSIX_FADV_DONTNEED starts a dirty file's writeback on Linux without waiting for it;
# where os has no posix_fadvise (macOS) each fsync simply does all the work.
_WRITEBACK: int | None = getattr(os, "POSIX_FADV_DONTNEED", None)


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


@dataclass(frozen=True)
class Pending:
    """One file of a batch: where it goes, its bytes, and whether it must outlive a power cut.

    ``durable=False`` is for bytes whose loss costs nothing but a re-run (a cache
    entry, a copy of bytes already durable elsewhere): the rename still makes the
    write all-or-nothing for a killed process, only the fsyncs are skipped.
    """

    path: Path
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
    tmp: Path
    fd: int | None


def commit(
    groups: Sequence[Sequence[Pending]], *, made: set[Path] | None = None
) -> list[OSError | None]:
    """Write every group's files in one round: write all, fsync all, rename all, fsync each
    directory once (DESIGN.md §13). Returns each group's first error (None: all renamed).

    A round of :data:`SYNCFS_FROM` durable files or more replaces the fsyncs with
    one ``syncfs`` per file system before the renames and one after (Linux): the
    same order, one journal commit each (see :func:`_whole_filesystem_sync`).

    A supersedable name several groups of the round write is written once, with
    the last group's bytes (a thousand providers sharing one cache entry create
    one file, not a thousand: on ext4, making and dropping inodes at that rate
    was what a round cost most).

    Parent directories are made (``made`` remembers those known to exist). A group
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
        item.path: (g, i)
        for g, group in enumerate(groups)
        for i, item in enumerate(group)
        if item.supersedable
    }
    durable = sum(
        1
        for g, group in enumerate(groups)
        for i, item in enumerate(group)
        if item.durable and (not item.supersedable or last[item.path] == (g, i))
    )
    # A large round is made durable by one syncfs per file system (Linux), a small
    # one file by file: see _whole_filesystem_sync.
    sync = _whole_filesystem_sync() if durable >= SYNCFS_FROM else None
    written: list[tuple[int, _Staged]] = []  # written, not yet fsynced and closed
    try:
        for index, group in enumerate(groups):
            try:
                for position, item in enumerate(group):
                    if item.supersedable and last[item.path] != (index, position):
                        continue  # superseded within this round
                    _ensure_dir(item.path.parent, known)
                    fd, tmp = _exclusive_temp(item.path.parent, item.path.name, item.mode)
                    entry = _Staged(item, tmp, fd)
                    staged[index].append(entry)
                    _fill(entry, writeback=sync is None)
                    written.append((index, entry))
            except OSError as exc:
                errors[index] = _naming(exc, item.path)
                _discard(staged[index])
            if len(written) >= SETTLE_CHUNK:
                _settle(written, staged, errors, fsync=sync is None)
        _settle(written, staged, errors, fsync=sync is None)
        if sync is not None:
            failure = _sync_filesystems(
                sync, (e.item.path.parent for files in staged for e in files if e.item.durable)
            )
            if failure is not None:  # what was written may not be on disk: rename nothing
                for index, files in enumerate(staged):
                    if files:  # each group's error names its own file
                        path = str(files[0].item.path)
                        errors[index] = type(failure)(failure.errno, failure.strerror, path)
                        _discard(files)
        renamed: list[Pending] = []
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
                renamed.append(entry.item)
    finally:  # an exception we did not expect (KeyboardInterrupt): no temporary stays
        for files in staged:
            _discard(files)
    directories = _distinct(item.path.parent for item in renamed if item.durable)
    if sync is not None:
        _sync_filesystems(sync, directories)  # best effort, as fsync_dir is
    else:
        for directory in directories:
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
    (error,) = commit([group], made={path.parent for path, _data in items})
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


def _fill(entry: _Staged, *, writeback: bool) -> None:
    """Write the temporary file's bytes (and start their writeback); the file stays open.

    Starting every file's writeback before the first fsync puts the block
    allocations of the whole chunk in one journal transaction, so on ext4 the
    chunk's fsyncs share a few journal commits instead of one commit each.
    """
    fd = entry.fd
    assert fd is not None
    if entry.item.mode & 0o077 == 0:
        os.fchmod(fd, entry.item.mode)  # a private file is private whatever the umask
    _write_fd(fd, entry.item.data)
    if writeback and entry.item.durable and _WRITEBACK is not None:
        with contextlib.suppress(OSError):  # only a hint: the fsync below is what counts
            os.posix_fadvise(fd, 0, 0, _WRITEBACK)


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


_SYNCFS: list[Callable[[int], int] | None] = []  # resolved once: libc's syncfs, or None


def _whole_filesystem_sync() -> Callable[[int], int] | None:
    """libc's ``syncfs`` on Linux, else None (every file is then fsynced on its own).

    One ``syncfs`` makes everything written to a file system durable with one
    journal commit. A round of a thousand receipts fsynced one by one commits
    the ext4 journal again and again, and every mkdir or open the event loop
    makes meanwhile waits for those commits (4x slower, bench/README.md
    "Issue 15"). The price: it also writes out other programs' dirty data on
    that file system, which is why a small round keeps its per-file fsyncs.
    """
    if not _SYNCFS:
        call: Callable[[int], int] | None = None
        if sys.platform.startswith("linux"):
            try:
                import ctypes  # only a large round needs it

                libc = ctypes.CDLL(None, use_errno=True)
                function = libc.syncfs
                function.argtypes = [ctypes.c_int]
                function.restype = ctypes.c_int
                call = function
            except (OSError, AttributeError):  # no libc symbol: file-by-file fsync
                call = None
        _SYNCFS.append(call)
    return _SYNCFS[0]


def _sync_filesystems(sync: Callable[[int], int], directories: Iterable[Path]) -> OSError | None:
    """``sync`` once per file system holding one of ``directories``; the first failure."""
    synced: set[int] = set()
    for directory in _distinct(directories):
        try:
            fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError as exc:
            return exc
        try:
            device = os.fstat(fd).st_dev
            if device in synced:
                continue
            if sync(fd) != 0:
                import ctypes  # loaded already by _whole_filesystem_sync

                code = ctypes.get_errno()
                return OSError(code, os.strerror(code), str(directory))
            synced.add(device)
        finally:
            os.close(fd)
    return None


def _rename(entry: _Staged) -> None:
    try:
        entry.tmp.replace(entry.item.path)
    except OSError as exc:
        squatted = exc.errno in (errno.EISDIR, errno.ENOTEMPTY, errno.EEXIST)
        if not (squatted and entry.item.displace_dir and _is_real_dir(entry.item.path)):
            raise
        shutil.rmtree(entry.item.path, ignore_errors=True)
        entry.tmp.replace(entry.item.path)


def _is_real_dir(path: Path) -> bool:
    try:
        return stat.S_ISDIR(path.lstat().st_mode)  # never a symlink to one
    except OSError:
        return False


def _ensure_dir(directory: Path, made: set[Path]) -> None:
    if directory not in made:
        directory.mkdir(parents=True, exist_ok=True)
        made.add(directory)


def _naming(exc: OSError, path: Path) -> OSError:
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


def _unlink_quietly(path: Path) -> None:
    with contextlib.suppress(OSError):
        path.unlink()

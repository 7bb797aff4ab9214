"""Making a round of writes durable: per file and directory, or per file system.

DESIGN.md §13 orders a round as write all, fsync all, rename all, fsync the
directories. A small round does exactly that (with every file's writeback
started before the first fsync); a large one replaces the fsyncs with one
``syncfs`` per file system before the renames and one after
(measured: bench/README.md, "The file system, not Python, was the gap").
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable
from pathlib import Path

__all__ = [
    "SYNCFS_FROM",
    "WRITEBACK",
    "fsync_dir",
    "one_per_filesystem",
    "sync_each",
    "sync_filesystems",
    "whole_filesystem_sync",
]

# From this many durable files a round syncs whole file systems instead of each file.
SYNCFS_FROM = 16
# POSIX_FADV_DONTNEED starts a dirty file's writeback on Linux without waiting for it;
# where os has no posix_fadvise (macOS) each fsync simply does all the work.
WRITEBACK: int | None = getattr(os, "POSIX_FADV_DONTNEED", None)
_SYNCFS: list[Callable[[int], int] | None] = []  # resolved once: libc's syncfs, or None


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


def whole_filesystem_sync() -> Callable[[int], int] | None:
    """libc's ``syncfs`` on Linux, else None (every file is then fsynced on its own).

    One ``syncfs`` makes everything written to a file system durable in one
    pass. A round of a thousand receipts fsynced one by one wrote their
    directories' metadata out again and again (ext4 syncs a new file's parent
    directories with it; a journaled ext4 commits its journal instead), and
    every mkdir or open the event loop made meanwhile waited for those writes
    (3-4x slower, bench/README.md "Issue 15"). The price: it also writes out
    other programs' dirty data on that file system, which is why a small round
    keeps its per-file fsyncs.
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


def sync_filesystems(
    sync: Callable[[int], int], directories: Iterable[str | Path]
) -> OSError | None:
    """``sync`` once per file system holding one of ``directories``; the first failure."""
    found = one_per_filesystem(directories)
    return found if isinstance(found, OSError) else sync_each(sync, found)


def one_per_filesystem(directories: Iterable[str | Path]) -> list[str | Path] | OSError:
    """The first of ``directories`` on each file system (one ``stat`` each); or the failure.

    Opening, fstat-ing and closing every directory of a round — one per
    provider, twice a round — was six system calls per provider on the writer
    thread, each a hand-off of the GIL the event loop needs.
    """
    devices: dict[int, str | Path] = {}
    for directory in dict.fromkeys(directories):
        try:
            device = os.stat(directory).st_dev  # noqa: PTH116 - str or Path alike
        except OSError as exc:
            return exc
        devices.setdefault(device, directory)
    return list(devices.values())


def sync_each(sync: Callable[[int], int], directories: Iterable[str | Path]) -> OSError | None:
    """``sync`` (libc's ``syncfs``) through each directory; the first failure."""
    for directory in directories:
        try:
            fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError as exc:
            return exc
        try:
            if sync(fd) != 0:
                import ctypes  # loaded already by whole_filesystem_sync

                code = ctypes.get_errno()
                return OSError(code, os.strerror(code), str(directory))
        finally:
            os.close(fd)
    return None

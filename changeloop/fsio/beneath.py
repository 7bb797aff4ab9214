"""Writes below a directory others can write into (a shared cache): never through a link.

Example::

    write_beneath(Path("/mnt/shared"), ("3f2a…", "test.json"), envelope)

:func:`changeloop.fsio.writes.write_atomic` never writes through a symlink planted
at the file's own name; a shared directory can also hold a planted *folder* link
(``DIR/<fingerprint> -> /somewhere/else``). Here every folder below the base is
opened relative to its parent's descriptor without following a link, and the
file is an exclusive temporary renamed within the last folder's descriptor.
"""

from __future__ import annotations

import contextlib
import errno
import os
from collections.abc import Sequence
from pathlib import Path

from changeloop.fsio.writes import TEMP_FLAGS, TEMP_NAMES, write_fd

__all__ = ["write_beneath"]


def write_beneath(base: Path, parts: Sequence[str], data: bytes, *, mode: int = 0o644) -> None:
    """Replace ``base/<parts…>`` with ``data``, making the folders between, through no symlink.

    For a directory others can write into (a shared cache): ``base`` is the caller's
    own (made if missing); each folder below it is made, then opened relative to its
    parent's descriptor without following a link, and the file is an exclusive
    temporary renamed within the last folder's descriptor. A symlink planted at any
    name below ``base`` is refused (``OSError`` naming it), never written through.
    """
    *folders, name = parts
    base.mkdir(parents=True, exist_ok=True)
    fd = os.open(base, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    where = base
    try:
        for folder in folders:
            where = where / folder
            with contextlib.suppress(FileExistsError):
                os.mkdir(folder, 0o755, dir_fd=fd)
            below = _open_folder(fd, folder, where)
            os.close(fd)
            fd = below
        for _attempt in range(16):
            tmp = f".{name}.{os.getpid()}.{TEMP_NAMES.getrandbits(48):012x}.tmp"
            try:
                out = os.open(tmp, TEMP_FLAGS, mode, dir_fd=fd)
                break
            except FileExistsError:
                continue
        else:
            raise FileExistsError(errno.EEXIST, "no free temporary name", str(where / name))
        try:
            write_fd(out, data)
            os.fsync(out)
        finally:
            os.close(out)
        try:
            os.rename(tmp, name, src_dir_fd=fd, dst_dir_fd=fd)
        except OSError:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=fd)
            raise
        with contextlib.suppress(OSError):  # best effort, as fsync_dir is
            os.fsync(fd)
    finally:
        os.close(fd)


def _open_folder(parent: int, folder: str, where: Path) -> int:
    """``folder`` under the descriptor ``parent``, opened only if it is a real directory."""
    try:
        opened = os.open(
            folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=parent
        )
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            refused = "a symlink or a file stands there; refused"
            raise OSError(exc.errno, refused, str(where)) from exc
        raise OSError(exc.errno, exc.strerror, str(where)) from exc
    return opened

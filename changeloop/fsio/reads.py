"""Bounded reads of regular files: what wiring names is read without surprises.

Reads of files that wiring names (keys, reports, contracts) go through
:func:`read_regular`: it opens without blocking (a FIFO cannot hang a run),
insists on a regular file (``/dev/zero`` cannot grow memory) and reads at most
``limit`` bytes (docs/processes.md).

Changeloop's own state files (``.changeloop/executables.json``,
``validated.json``, ``durations.json``, ``run.json``, records) are read with
:func:`read_state` / :func:`load_state_json`: the same bounded read, never
through a symlink, and any failure — absent, a FIFO, a link to ``/dev/zero``,
too big, not JSON, nested past the parser's depth — is ``None``: no memo.
"""

from __future__ import annotations

import errno
import json
import os
import stat
from pathlib import Path
from typing import Any

from changeloop.errors import FileRefused

__all__ = [
    "KIB",
    "MIB",
    "load_state_json",
    "read_regular",
    "read_regular_stat",
    "read_state",
    "symlink_under",
]

KIB = 1024
MIB = 1024 * KIB


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


def read_regular(path: Path, *, limit: int, what: str, follow_symlinks: bool = True) -> bytes:
    """The bytes of the regular file ``path`` (at most ``limit``); else :class:`FileRefused`.

    ``what`` names the file in the refusal ("public key", "report"…). A FIFO,
    a device or a directory is refused without blocking on it; with
    ``follow_symlinks=False`` so is a symlink at ``path`` (a planted link is never read
    through).
    """
    return read_regular_stat(path, limit=limit, what=what, follow_symlinks=follow_symlinks)[0]


def read_state(path: Path, *, limit: int) -> bytes | None:
    """A state file's bytes; None unless it is a regular file (not reached through a
    symlink at its name) of at most ``limit`` bytes that can be read."""
    try:
        return read_regular_stat(path, limit=limit, what="state file", follow_symlinks=False)[0]
    except FileRefused:
        return None


def load_state_json(path: Path, *, limit: int) -> Any:
    """A state file parsed as JSON; None when :func:`read_state` refuses it or it is not
    JSON the parser can hold (too deeply nested included)."""
    raw = read_state(path, limit=limit)
    if raw is None:
        return None
    try:
        return json.loads(raw)
    except (ValueError, RecursionError):
        return None


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

"""A worker's archive, unpacked where it can do no harm, and the few files taken from it.

Example::

    extract(answer.logs, staging)                       # StagingRefused on anything odd
    log = copy_file(staging, answer.log_name, log_dir)  # a declared file, copied out
    report = read_file(staging, "reports/junit.xml", limit=REPORT_LIMIT)

What a worker sends is data from another machine (docs/scale-out.md): the
staging directory is fresh and private, an archive may hold only regular files
and directories under relative names without ``..`` (no links, hard or
symbolic, no devices or FIFOs, no absolute paths), at most ``MAX_MEMBERS``
entries and ``MAX_BYTES`` in all. The worker's own code never sends anything
else, so anything else refuses the whole answer.
"""

from __future__ import annotations

import contextlib
import io
import os
import tarfile
from pathlib import Path, PurePosixPath

from changeloop.errors import FileRefused
from changeloop.executors.worker_files import MAX_OUTPUT_BYTES
from changeloop.fsio import read_regular

MAX_MEMBERS = 10_000
MAX_BYTES = 2 * MAX_OUTPUT_BYTES  # the files a command wrote, and its logs
_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


class StagingRefused(Exception):
    """The archive holds what the worker's code never sends (named in the message)."""


def clean_name(name: str) -> str:
    """``name`` as a plain relative path (``./`` dropped); StagingRefused when it is not one."""
    if not name or "\0" in name or name.startswith("/") or "\\" in name:
        raise StagingRefused(f"{name!r} is not a relative path")
    parts = [p for p in PurePosixPath(name).parts if p != "."]
    if not parts or ".." in parts:
        raise StagingRefused(f"{name!r} leaves its directory")
    return "/".join(parts)


def extract(data: bytes, dest: Path) -> None:
    """Unpack the uncompressed tar ``data`` into the new directory ``dest``, safely."""
    dest.mkdir(mode=0o700)
    if not data:
        return
    if len(data) > MAX_BYTES + MAX_MEMBERS * 1024:
        raise StagingRefused(f"the archive is {len(data)} bytes, over the bound")
    total = 0
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:") as archive:
            for count, member in enumerate(archive, start=1):
                if count > MAX_MEMBERS:
                    raise StagingRefused(f"more than {MAX_MEMBERS} entries")
                name = clean_name(member.name)
                if member.isdir():
                    _mkdirs(dest, name)
                    continue
                if not member.isfile():
                    raise StagingRefused(f"{name!r} is {_kind(member)}, not a regular file")
                total += member.size
                if total > MAX_BYTES:
                    raise StagingRefused(f"more than {MAX_BYTES} bytes of files")
                source = archive.extractfile(member)
                if source is None:  # pragma: no cover - a regular member always has a body
                    raise StagingRefused(f"{name!r} has no content")
                parent = _mkdirs(dest, str(PurePosixPath(name).parent))
                fd = os.open(parent / PurePosixPath(name).name, _CREATE, 0o600)
                with os.fdopen(fd, "wb") as out:
                    while chunk := source.read(1 << 20):
                        out.write(chunk)
    except FileExistsError as exc:
        raise StagingRefused(f"{exc.filename!r} appears twice") from exc
    except (tarfile.TarError, EOFError) as exc:
        raise StagingRefused(f"not a readable tar archive: {exc}") from exc


def _mkdirs(dest: Path, name: str) -> Path:
    """``dest/name`` as real directories (a link never exists here: none is ever made)."""
    path = dest
    for part in PurePosixPath(name).parts:
        if part == ".":
            continue
        path = path / part
        with contextlib.suppress(FileExistsError):
            path.mkdir(mode=0o700)
        if path.is_symlink() or not path.is_dir():
            raise StagingRefused(f"{name!r} is a file and a directory")
    return path


def _kind(member: tarfile.TarInfo) -> str:
    if member.issym():
        return f"a symbolic link to {member.linkname!r}"
    if member.islnk():
        return f"a hard link to {member.linkname!r}"
    if member.isfifo():
        return "a FIFO"
    if member.ischr() or member.isblk():
        return "a device"
    return "a special entry"


def read_file(root: Path, name: str, limit: int = MAX_BYTES) -> bytes | None:
    """The bytes of staged file ``name`` (None when the archive did not hold it).

    FileRefused when it is there but not a regular file or over ``limit``.
    """
    path = root / clean_name(name)
    try:
        return read_regular(path, limit=limit, what=f"the worker's {name}")
    except FileRefused as exc:
        if exc.missing:
            return None
        raise


def copy_file(root: Path, name: str, dest_dir: Path) -> Path:
    """Copy staged ``name`` to ``dest_dir/name`` (written beside, renamed over: no link followed).

    A declared file the archive lacks becomes an empty one, as a command that
    printed nothing leaves.
    """
    clean = clean_name(name)
    data = read_file(root, clean) or b""
    target = dest_dir / clean
    target.parent.mkdir(parents=True, exist_ok=True)
    if target.parent.is_symlink() or not target.parent.resolve().is_relative_to(dest_dir.resolve()):
        raise StagingRefused(f"{name!r} would be written outside {dest_dir}")
    temp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    with contextlib.suppress(FileNotFoundError):
        temp.unlink()
    fd = os.open(temp, _CREATE, 0o644)
    with os.fdopen(fd, "wb") as out:
        out.write(data)
    temp.replace(target)
    return target

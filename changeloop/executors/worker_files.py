"""Files on a worker: the paths a job names re-pointed, and what a command wrote sent back.

The coordinator's paths (its sandbox, its log directory) in a job's argv and
environment become the worker's own (:func:`swap`), and the worker's paths in
what the job wrote become the coordinator's again (:func:`repoint_back`). What
a command wrote in its sandbox since it started — not what setup left there
(:func:`snapshot`) — goes back as one bounded tar archive (:func:`pack_dir`).
"""

from __future__ import annotations

import contextlib
import io
import os
import tarfile
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

from changeloop.executors.job import Job

MAX_OUTPUT_BYTES = 64 * 1024 * 1024  # files a command wrote, sent back at most
SKIP_DIRS = frozenset({".git", "__pycache__"})

Baseline = Mapping[str, tuple[int, int]]  # relative path -> (mtime_ns, size) after setup


def repoint_back(
    job: Job, sandbox: Path, jobdir: Path, swaps: Sequence[tuple[str, str]], keep: set[str]
) -> None:
    """Paths of this worker in the report and the job's records become the coordinator's.

    Adapters compare recorded paths (where a module was imported from, which
    file a test traced, a report's file names) with the coordinator's sandbox.
    Every file the job left in its directory is re-pointed except the logs in
    ``keep``, which stay as written (their digest is of the bytes the command wrote).
    """
    back = sorted(
        ((new.encode(), old.encode()) for old, new in swaps if old),
        key=lambda pair: len(pair[0]),
        reverse=True,
    )
    files = [sandbox / job.report] if job.report else []
    files.extend(
        path for path, _ in walk(jobdir) if path.relative_to(jobdir).as_posix() not in keep
    )
    # ``job.collect`` names directories under the job's log directory (``jobdir`` here):
    # the walk above has them already.
    for path in files:
        with contextlib.suppress(OSError):
            if path.is_symlink() or not path.is_file():
                continue
            data = original = path.read_bytes()
            for worker_path, coordinator_path in back:
                data = data.replace(worker_path, coordinator_path)
            if data != original:
                path.write_bytes(data)


def swap(text: str, swaps: Sequence[tuple[str, str]]) -> str:
    """Re-point coordinator paths; the longest first (the log directory may lie in the checkout)."""
    for old, new in sorted(swaps, key=lambda pair: len(pair[0]), reverse=True):
        if old and old in text:
            text = text.replace(old, new)
    return text


def relative(path: Path, root: Path) -> str:
    """``path`` relative to ``root``, or its name when it lies elsewhere."""
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return path.name


def walk(root: Path) -> Iterator[tuple[Path, os.stat_result]]:
    """Every file under ``root`` with its ``lstat``, in a stable order, ``.git`` left out."""
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS)
        for name in sorted(files):
            path = Path(folder) / name
            with contextlib.suppress(OSError):
                yield path, path.lstat()


def snapshot(root: Path) -> dict[str, tuple[int, int]]:
    """(mtime_ns, size) of every file: what a later pack leaves out as unchanged."""
    return {
        path.relative_to(root).as_posix(): (stat.st_mtime_ns, stat.st_size)
        for path, stat in walk(root)
    }


def pack_dir(root: Path, since: float, baseline: Baseline | None = None) -> bytes:
    """Files under ``root`` written at or after ``since`` and not as ``baseline`` had them.

    Bounded to MAX_OUTPUT_BYTES; an uncompressed tar archive, or b"" for none.
    """
    buffer = io.BytesIO()
    budget = MAX_OUTPUT_BYTES
    added = False
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        for path, stat in walk(root):
            name = path.relative_to(root).as_posix()
            if stat.st_mtime < since or stat.st_size > budget:
                continue
            if baseline is not None and baseline.get(name) == (stat.st_mtime_ns, stat.st_size):
                continue
            budget -= stat.st_size
            archive.add(path, arcname=name, recursive=False)
            added = True
    # nothing written: nothing to send (an empty tar is 10 KiB, and slow to recognise)
    return buffer.getvalue() if added else b""

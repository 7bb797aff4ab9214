"""Files on a worker: the paths a job names re-pointed, and what a command wrote sent back.

The coordinator's paths (its sandbox, its log directory) in a job's argv and
environment become the worker's own (:func:`swap`), and the worker's paths in
what the job wrote become the coordinator's again (:func:`repoint_back`). What the
coordinator reads of a job — its logs, its collected records, its report, and
nothing else it wrote — goes back as one bounded tar archive (:func:`pack_named`).
"""

from __future__ import annotations

import contextlib
import io
import os
import stat
import tarfile
from collections.abc import Iterator, Sequence
from pathlib import Path

from changeloop.executors.job import Job

MAX_OUTPUT_BYTES = 64 * 1024 * 1024  # files a command wrote, sent back at most
SKIP_DIRS = frozenset({".git", "__pycache__"})


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


def pack_named(root: Path, names: Sequence[str], folders: Sequence[str]) -> bytes:
    """The regular files ``names`` and those directly in ``folders`` (all relative to ``root``).

    A name that leaves ``root`` (``..``, a link on the way) or is not a regular
    file is left out; bounded to MAX_OUTPUT_BYTES. An uncompressed tar archive,
    or b"" for none.
    """
    wanted: list[str] = [n for n in names if n]
    for folder in folders:
        directory = _inside(root, folder)
        if directory is None or directory.is_symlink() or not directory.is_dir():
            continue
        with contextlib.suppress(OSError):
            wanted.extend(f"{folder}/{entry.name}" for entry in sorted(directory.iterdir()))
    buffer = io.BytesIO()
    budget = MAX_OUTPUT_BYTES
    added: set[str] = set()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        for name in wanted:
            path = _inside(root, name)
            if path is None or name in added:
                continue
            with contextlib.suppress(OSError):
                info = path.lstat()
                if not stat.S_ISREG(info.st_mode) or info.st_size > budget:
                    continue
                budget -= info.st_size
                archive.add(path, arcname=name, recursive=False)
                added.add(name)
    return buffer.getvalue() if added else b""


def _inside(root: Path, name: str) -> Path | None:
    """``root / name`` when it stays inside ``root`` once links are resolved, else None."""
    if not name or name.startswith("/") or ".." in Path(name).parts:
        return None
    path = root / name
    try:
        path.parent.resolve().relative_to(root.resolve())
    except (ValueError, OSError, RuntimeError):
        return None
    return path


def write_inputs(
    jobdir: Path, inputs: Sequence[tuple[str, bytes]], swaps: Sequence[tuple[str, str]]
) -> None:
    """Write the job's input files into ``jobdir``, the coordinator's paths re-pointed here."""
    for name, data in inputs:
        path = _inside(jobdir, name) if len(Path(name).parts) <= 4 else None
        if path is None:
            continue
        text = data
        for old, new in sorted(swaps, key=lambda pair: len(pair[0]), reverse=True):
            if old:
                text = text.replace(old.encode(), new.encode())
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text)

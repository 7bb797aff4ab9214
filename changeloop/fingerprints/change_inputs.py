"""The change inputs: what under ``openspec/`` a check may read, as one digest.

The content identity leaves the top-level ``openspec/`` out, so that committing a
change's docs and receipts invalidates nothing. But a check can read files
there — a script (``command: [sh, openspec/changes/c/check.sh]``), test data in
the change folder. So every file under the workspace's ``openspec/`` counts in
every provider's wiring digest, except:

- Markdown (``*.md``, ``*.markdown``): proposals, specs, tasks, docs;
- every folder named ``receipts`` and the ``receipts:`` location of each
  ``external`` provider: evidence arrives there after it was made;
- the change's own ``evidence.yaml`` and ``execution.yaml`` (each provider's
  wiring already holds what it reads of them).

Files are those on disk — tracked, untracked and ignored alike: a check reads
what is there — hashed as they are (a symbolic link by its text and, where it
leads to a file, that file's bytes), except what tools leave behind as caches
(:data:`CACHES`: ``__pycache__``, ``.pytest_cache``, ``node_modules``, ``*.pyc``,
``.DS_Store``…), which would otherwise change the digest on every run of a check
kept there. The change's own folder is named relative to itself, so archiving the
change keeps its digest::

    change_inputs_digest(root, change_path)   # "sha256:…"
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Iterable, Sequence
from pathlib import Path

from changeloop.signing.jcs import canonicalize

__all__ = ["CACHES", "OPENSPEC", "change_inputs_digest", "counted"]

OPENSPEC = "openspec"
# What tools write beside the files they read (a check run in place makes them): never an input.
CACHES = frozenset(
    {
        "__pycache__",
        ".pytest_cache",
        ".mypy_cache",
        ".ruff_cache",
        ".hypothesis",
        ".tox",
        ".nox",
        ".venv",
        "node_modules",
        ".DS_Store",
        ".git",
    }
)
_CACHE_SUFFIXES = (".pyc", ".pyo")
_MARKDOWN = (".md", ".markdown")
_OWN = ("evidence.yaml", "execution.yaml")


def counted(rel: str, change: str, excluded: Sequence[str] = ()) -> bool:
    """Whether ``rel`` (relative to the workspace root) is a change input."""
    parts = rel.split("/")
    if parts[0] != OPENSPEC or len(parts) < 2:
        return False
    if rel.lower().endswith(_MARKDOWN) or "receipts" in parts[1:-1]:
        return False
    if any(rel == e or rel.startswith(e.rstrip("/") + "/") for e in excluded):
        return False
    return not (rel.startswith(change + "/") and rel[len(change) + 1 :] in _OWN)


def change_inputs_digest(root: Path, change_path: Path, excluded: Iterable[Path] = ()) -> str:
    """``"sha256:<hex>"`` over (name, mode, content digest) of every change input of the
    workspace at ``root`` for the change at ``change_path``; ``excluded``: further paths
    (``external`` providers' ``receipts:``) left out with everything under them."""
    change = _relative(root, change_path) or "\0"  # "\0": no folder of it under the root
    skip = sorted(r for r in (_relative(root, p) for p in excluded) if r is not None)
    files: list[list[str]] = []
    for rel in _listed(root):
        if not counted(rel, change, skip):
            continue
        entry = _entry(root / rel)
        if entry is None:
            continue  # tracked but deleted from the work tree: not there to read
        name = rel
        if rel.startswith(change + "/"):
            name = "change:" + rel[len(change) + 1 :]  # stable across `openspec archive`
        files.append([_text(name), *entry])
    files.sort()
    return "sha256:" + hashlib.sha256(canonicalize({"files": files})).hexdigest()


def _text(name: str) -> str:
    """A file name as JSON can hold it (bytes that are no UTF-8 as hex)."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return "hex:" + os.fsencode(name).hex()
    return name


def _relative(root: Path, path: Path) -> str | None:
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except (ValueError, OSError):
        return None


def _listed(root: Path) -> list[str]:
    """Files (and links) under ``root/openspec``, caches left out; links to folders are
    not followed (the link itself is listed)."""
    folder = root / OPENSPEC
    if not folder.is_dir() or folder.is_symlink():
        return []
    out = []
    for dirpath, dirnames, names in os.walk(folder):
        here = Path(dirpath)
        kept = []
        for name in dirnames:
            if (here / name).is_symlink():
                names.append(name)  # a link to a folder: its text (and no walk through it)
            elif name not in CACHES and name != "receipts":
                kept.append(name)
        dirnames[:] = sorted(kept)
        for name in names:
            if name in CACHES or name.endswith(_CACHE_SUFFIXES):
                continue
            out.append((here / name).relative_to(root).as_posix())
    return sorted(out)


def _entry(path: Path) -> list[str] | None:
    """(mode, digest) of a file as it is on disk; None when it is not there."""
    try:
        info = path.lstat()
    except OSError:
        return None
    if stat.S_ISLNK(info.st_mode):
        try:
            text = os.fsencode(path.readlink())
        except OSError:
            return None  # gone since it was listed
        target = _file_digest(path) if path.is_file() else "-"  # where it leads, if a file
        return ["120000", hashlib.sha256(text).hexdigest() + ":" + target]
    if not stat.S_ISREG(info.st_mode):
        return None
    mode = "100755" if info.st_mode & 0o111 else "100644"
    return [mode, _file_digest(path)]


def _file_digest(path: Path) -> str:
    digest = hashlib.sha256()
    try:
        with path.open("rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                digest.update(block)
    except OSError:
        return "unreadable"
    return digest.hexdigest()

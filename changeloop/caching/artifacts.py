"""The files a provider makes (``artifacts:``), kept with its cache entry and put back.

A provider reused from the cache did not run, so what it would have written (a
build's output its dependents read) is not in a fresh sandbox. When its
dependents must run, the engine restores the files it declared as
``artifacts: [path or glob]`` (relative to its repository) from here — or, with
none declared, runs it again (``changeloop.run.outputs``).

Layout under ``.changeloop/cache/``: the blobs are content-addressed
(``artifacts/<ab>/<sha256>``), and ``<fingerprint hex>.artifacts.json`` lists the
files ``[path, mode, sha256, size]`` with an HMAC under a key the workspace key
derives, so a planted or edited list is never followed; every blob is hashed
again before a byte of it is written. Bounded: at most :data:`MAX_FILES` files and
:data:`MAX_BYTES` per provider (beyond: nothing is kept, and the provider runs
again when needed), and :data:`STORE_BYTES` for all blobs (the oldest go first)::

    keep(cache_dir, fp, workdir, ("build/**",), key)   # after a passing run
    restore(cache_dir, fp, workdir, key)               # True: every file put back
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import stat
from collections.abc import Sequence
from pathlib import Path

from changeloop import fsio
from changeloop.errors import FileRefused
from changeloop.fingerprints.fingerprint import matching
from changeloop.fingerprints.ignored import literal_path
from changeloop.signing.jcs import canonicalize

__all__ = ["MAX_BYTES", "MAX_FILES", "STORE_BYTES", "keep", "kept", "restore"]

MAX_FILES = 10_000
MAX_BYTES = 256 * fsio.MIB
STORE_BYTES = 2 * 1024 * fsio.MIB
BLOBS = "artifacts"
_MANIFEST_LIMIT = 16 * fsio.MIB
_SKIP = frozenset({".git", ".changeloop"})


def manifest_path(cache_dir: Path, fingerprint: str) -> Path:
    return cache_dir / f"{fingerprint.removeprefix('sha256:')}.artifacts.json"


def _blob(cache_dir: Path, digest: str) -> Path:
    return cache_dir / BLOBS / digest[:2] / digest


def _mac(key: bytes, fingerprint: str, files: Sequence[Sequence[object]]) -> str:
    message = canonicalize({"fingerprint": fingerprint, "files": [list(f) for f in files]})
    return hmac.new(key, b"changeloop artifacts\0" + message, "sha256").hexdigest()


def collect(workdir: Path, globs: Sequence[str]) -> list[str] | None:
    """The regular files under ``workdir`` the globs match (git's pathspec rules, as
    ``inputs``), walking only the folders the patterns name; None beyond the bound."""
    roots: set[str] = set()
    for pattern in globs:
        named = literal_path(pattern)
        roots.add(named.split("/", 1)[0] if named else "")
    found: list[bytes] = []
    for top in sorted(roots):
        base = workdir / top if top else workdir
        if base.is_file() and not base.is_symlink():
            found.append(os.fsencode(top))
            continue
        for dirpath, dirnames, names in os.walk(base):
            dirnames[:] = sorted(d for d in dirnames if d not in _SKIP)
            for name in names:
                full = Path(dirpath) / name
                found.append(os.fsencode(full.relative_to(workdir).as_posix()))
            if len(found) > 4 * MAX_FILES:
                return None
    chosen = [p for p in matching(sorted(set(found)), globs) if _regular(workdir / p)]
    return chosen if len(chosen) <= MAX_FILES else None


def _regular(path: Path) -> bool:
    try:
        return stat.S_ISREG(path.lstat().st_mode)
    except OSError:
        return False


def keep(
    cache_dir: Path, fingerprint: str, workdir: Path, globs: Sequence[str], key: bytes
) -> bool:
    """Store the files ``globs`` match in ``workdir`` for ``fingerprint``; False when they
    exceed the bounds or cannot be written (then nothing is listed: a miss later)."""
    target = manifest_path(cache_dir, fingerprint)
    paths = collect(workdir, globs)
    if paths is None:
        _forget(target)
        return False
    files: list[list[object]] = []
    total = 0
    try:
        for rel in paths:
            data = (workdir / rel).read_bytes()
            total += len(data)
            if total > MAX_BYTES:
                _forget(target)
                return False
            digest = hashlib.sha256(data).hexdigest()
            blob = _blob(cache_dir, digest)
            if not blob.is_file():
                blob.parent.mkdir(parents=True, exist_ok=True)
                fsio.write_atomic(blob, data, mode=0o644, durable=False)
            mode = 0o755 if (workdir / rel).stat().st_mode & 0o111 else 0o644
            files.append([rel, mode, digest, len(data)])
        doc = {"fingerprint": fingerprint, "files": files, "mac": _mac(key, fingerprint, files)}
        fsio.write_atomic(target, json.dumps(doc).encode(), durable=False)
    except OSError:
        _forget(target)
        return False
    _bound(cache_dir)
    return True


def kept(cache_dir: Path, fingerprint: str, key: bytes) -> list[list[object]] | None:
    """The verified list of files kept for ``fingerprint`` (every blob present); None."""
    try:
        raw = fsio.read_regular_stat(
            manifest_path(cache_dir, fingerprint),
            limit=_MANIFEST_LIMIT,
            what="artifacts",
            follow_symlinks=False,
        )[0]
        doc = json.loads(raw)
        files = doc["files"]
        if doc.get("fingerprint") != fingerprint or not isinstance(files, list):
            return None
        if not hmac.compare_digest(str(doc.get("mac")), _mac(key, fingerprint, files)):
            return None
    except (FileRefused, ValueError, KeyError, TypeError, RecursionError):
        return None
    for entry in files:
        if not (isinstance(entry, list) and len(entry) == 4 and isinstance(entry[2], str)):
            return None
        if not _blob(cache_dir, entry[2]).is_file():
            return None
    return files


def restore(cache_dir: Path, fingerprint: str, workdir: Path, key: bytes) -> bool:
    """Write every file kept for ``fingerprint`` into ``workdir``; False (and nothing more
    written) at the first blob that is missing, damaged or would land outside it."""
    files = kept(cache_dir, fingerprint, key)
    if files is None:
        return False
    root = workdir.resolve()
    for rel, mode, digest, size in files:
        path = workdir / str(rel)
        try:
            data = fsio.read_regular(
                _blob(cache_dir, str(digest)), limit=MAX_BYTES, what="artifact"
            )
        except FileRefused:
            return False
        if len(data) != size or hashlib.sha256(data).hexdigest() != digest:
            return False  # a blob that is not what its name says: never restored
        if not _inside(root, str(rel), path):
            return False
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            if not _inside(root, str(rel), path):  # a folder on the way that is a link out
                return False
            fsio.write_atomic(path, data, mode=0o755 if mode == 0o755 else 0o644, durable=False)
        except OSError:
            return False
    return True


def _inside(root: Path, rel: str, path: Path) -> bool:
    """``rel`` names a file under ``root`` on paper and on disk (no link leads out)."""
    if Path(rel).is_absolute() or ".." in Path(rel).parts:
        return False
    try:
        path.parent.resolve().relative_to(root)
    except (ValueError, OSError, RuntimeError):
        return False
    return True


def _forget(path: Path) -> None:
    try:
        if path.is_file() and not path.is_symlink():
            path.unlink()
    except OSError:
        pass


def _bound(cache_dir: Path) -> None:
    """Keep the blobs under :data:`STORE_BYTES`: the least recently written go first (a
    list naming one of them is a miss then, never a wrong file)."""
    blobs: list[tuple[float, int, Path]] = []
    total = 0
    for path in (cache_dir / BLOBS).glob("*/*"):
        try:
            info = path.lstat()
        except OSError:
            continue
        if stat.S_ISREG(info.st_mode):
            blobs.append((info.st_mtime, info.st_size, path))
            total += info.st_size
    for _mtime, size, path in sorted(blobs):
        if total <= STORE_BYTES:
            break
        _forget(path)
        total -= size

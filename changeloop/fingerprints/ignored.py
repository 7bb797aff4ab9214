"""Ignored paths an ``inputs`` pattern names: hashed from the disk, since no tree holds them.

Ignored files are not content (the content identity leaves them out). An
``inputs`` pattern may still *name* one: a pattern whose literal part — the
path before its first wildcard (``build/flag``, ``build/`` of ``build/*.json``)
— lies in an ignored path covers the ignored files under it, and those are
hashed here. A broad pattern (``**/*.py``, ``src/**``) never reaches into an
ignored folder it does not name, so a virtualenv or ``__pycache__`` under it
stays out::

    found = IgnoredPaths(workdir, [("build/flag", "src/**")])
    found.digest(("build/flag", "src/**"))   # {"build/flag": "sha256:…"} or None
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Iterable, Sequence
from pathlib import Path

from changeloop.fingerprints.pathspec import literal_prefix, normalize
from changeloop.git.repo import git, git_env
from changeloop.signing.jcs import canonicalize

__all__ = ["IgnoredPaths", "literal_path", "walk_digest"]

_WILD = b"*?[\\"
FILE_LIMIT = 20_000  # files hashed under one named ignored path; beyond: a marker, never a pass


def literal_path(pattern: str) -> str | None:
    """The literal part of ``pattern`` as a path (``build/`` of ``build/*.json``), or None
    when it names no folder or file of its own (``*.py``, ``**/x``)."""
    text = normalize(pattern)
    if text.endswith(b"/**") and not any(c in _WILD for c in text[:-3]):
        text = text[:-2]
    prefix = literal_prefix(pattern)  # no regex compiled: only the literal part is needed
    if prefix is None:  # literal: the path itself
        literal = text
    else:
        cut = prefix.rfind(b"/")
        literal = prefix[: cut + 1] if cut >= 0 else b""
    literal = literal.rstrip(b"/")
    return os.fsdecode(literal) if literal else None


class IgnoredPaths:
    """Which literal paths of a repository's ``inputs`` patterns git ignores (one
    ``git check-ignore`` for all of them), and digests of what lies there."""

    def __init__(self, workdir: Path, globs: Iterable[Sequence[str]]) -> None:
        self.workdir = workdir
        candidates = sorted({p for g in globs for p in map(literal_path, g) if p is not None})
        self.ignored = _check_ignore(workdir, candidates) if candidates else set()

    def named(self, globs: Sequence[str]) -> list[str]:
        """The ignored literal paths ``globs`` name."""
        found = {literal_path(g) for g in globs}
        return sorted(p for p in found if p is not None and p in self.ignored)

    def digest(self, globs: Sequence[str]) -> dict[str, str] | None:
        """Ignored path -> digest of the files under it ``globs`` match; None: none named."""
        named = self.named(globs)
        if not named:
            return None
        return {path: walk_digest(self.workdir, path, globs) for path in named}


def _check_ignore(workdir: Path, candidates: Sequence[str]) -> set[str]:
    """The ``candidates`` git ignores here (tracked paths never are)."""
    listing = b"".join(os.fsencode(c) + b"\0" for c in candidates)
    # --no-index: git's own look-up of each path in the index grows with the index; the few
    # paths found ignored are checked against it once instead.
    proc = git(
        ["check-ignore", "--no-index", "--stdin", "-z"],
        cwd=workdir,
        env=git_env(),
        check=False,
        input_bytes=listing,
    )
    if proc.returncode not in (0, 1):  # 1: none ignored; anything else: not a git work tree
        return set()
    ignored = {os.fsdecode(p) for p in proc.stdout.split(b"\0") if p}
    return ignored - _tracked(workdir, sorted(ignored)) if ignored else set()


def _tracked(workdir: Path, paths: Sequence[str]) -> set[str]:
    """Those of ``paths`` that are themselves files in the index."""
    listed = git(
        ["ls-files", "-z", "--cached", "--", *paths],
        cwd=workdir,
        env={**git_env(), "GIT_LITERAL_PATHSPECS": "1"},
        check=False,
    ).stdout
    return {os.fsdecode(p) for p in listed.split(b"\0") if p} & set(paths)


def walk_digest(workdir: Path, path: str, globs: Sequence[str]) -> str:
    """sha256 over (path, mode, sha256 of the bytes or the link text) of the files under
    ``path`` (or ``path`` itself) that ``globs`` match; an absent path hashes as such."""
    base = workdir / path
    files: list[list[str]] = []
    try:
        top = base.lstat()
    except OSError:
        return "sha256:" + hashlib.sha256(canonicalize({"absent": path})).hexdigest()
    is_dir = stat.S_ISDIR(top.st_mode)
    walked = _walk(workdir, base) if is_dir else [(os.fsencode(path), top)]
    from changeloop.fingerprints.fingerprint import matching  # noqa: PLC0415 - kept off the no-change answer's imports

    stats = dict(walked)
    chosen = matching(sorted(stats), globs)  # the very matcher the inputs digest uses
    for rel in chosen[:FILE_LIMIT]:
        files.append([rel, *_content(workdir / rel, stats[os.fsencode(rel)])])
    if len(chosen) > FILE_LIMIT:  # a marker, so a digest never stands for files unread
        files.append(["…", "too many files", str(len(chosen))])
    doc = {"path": path, "files": files}
    return "sha256:" + hashlib.sha256(canonicalize(doc)).hexdigest()


def _walk(workdir: Path, base: Path) -> list[tuple[bytes, os.stat_result]]:
    out: list[tuple[bytes, os.stat_result]] = []
    for dirpath, dirnames, filenames in os.walk(base):
        dirnames.sort()
        for name in sorted(filenames + [d for d in dirnames if (Path(dirpath) / d).is_symlink()]):
            full = Path(dirpath) / name
            try:
                info = full.lstat()
            except OSError:
                continue
            out.append((os.fsencode(full.relative_to(workdir).as_posix()), info))
    return sorted(out)


def _content(path: Path, info: os.stat_result) -> list[str]:
    if stat.S_ISLNK(info.st_mode):
        try:
            return ["120000", hashlib.sha256(os.fsencode(path.readlink())).hexdigest()]
        except OSError:
            return ["gone", ""]
    if not stat.S_ISREG(info.st_mode):
        return ["other", ""]
    digest = hashlib.sha256()
    try:
        with path.open("rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                digest.update(block)
    except OSError:
        return ["unreadable", ""]
    mode = "100755" if info.st_mode & 0o111 else "100644"
    return [mode, digest.hexdigest()]

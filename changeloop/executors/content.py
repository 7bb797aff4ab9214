"""Content by tree id (docs/scale-out.md): what the coordinator ships, how a worker checks it.

The coordinator packs a repository's tracked plus untracked-not-ignored files
(tracked only for ``--sandbox worktree``) into a tar archive, once per
content tree; a worker unpacks it into a cache keyed by the tree id, copies a
private sandbox from there, and recomputes the git tree of what it holds
(``openspec/`` left out, as ``changeloop.git.identity`` does) before any command
runs. Only plain ``git`` and the standard library are needed on a worker.
"""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import tarfile
import tempfile
import threading
from pathlib import Path

from changeloop.git.identity import OPENSPEC
from changeloop.git.repo import git

GIT_QUIET = {"GIT_CONFIG_NOSYSTEM": "1", "GIT_TERMINAL_PROMPT": "0"}


def tracked_files(source: Path) -> list[str]:
    out = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--", "."],
        cwd=source,
        check=True,
        capture_output=True,
    ).stdout
    return [os.fsdecode(p) for p in out.split(b"\0") if p and not p.endswith(b"/")]


def pack(source: Path, files: list[str]) -> bytes:
    """A tar archive of ``files`` (relative to ``source``); links stay links, modes kept."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz", compresslevel=1) as archive:
        for name in sorted(files):
            path = source / name
            if path.is_symlink() or path.is_file():
                archive.add(path, arcname=name, recursive=False)
    return buffer.getvalue()


def unpack(data: bytes, dest: Path) -> None:
    dest.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:*") as archive:
        archive.extractall(dest, filter="tar")


def tree_of(workdir: Path, git_dir: Path | None = None) -> str:
    """The git tree of everything in ``workdir`` minus top-level ``openspec/``.

    Hashed through a git directory outside ``workdir`` (``git_dir``, a worker's
    own, made once; else a throwaway one), so the sandbox itself never becomes
    a repository it was not. Two git processes: ``add`` (``openspec`` left out
    by an exclude pathspec) and ``write-tree``, through a private index.
    """
    with tempfile.TemporaryDirectory(prefix="changeloop-tree-") as tmp:
        git_dir = _hashing_repository(git_dir or Path(tmp) / "git")
        env = {
            **os.environ,
            **GIT_QUIET,
            "GIT_DIR": str(git_dir),
            "GIT_WORK_TREE": str(workdir),
            "GIT_INDEX_FILE": str(Path(tmp) / "index"),
        }

        def hashing_git(*args: str) -> bytes:
            return subprocess.run(
                ["git", *args], cwd=workdir, env=env, check=True, capture_output=True
            ).stdout

        hashing_git(
            "-c", "core.autocrlf=false", "add", "-A", "-f", "--", ".", f":(exclude){OPENSPEC}"
        )
        return hashing_git("write-tree").decode().strip()


def _hashing_repository(git_dir: Path) -> Path:
    """A bare repository at ``git_dir`` that only stores hashed objects (made once)."""
    if (git_dir / "HEAD").is_file():
        return git_dir
    git_dir.parent.mkdir(parents=True, exist_ok=True)
    staging = git_dir.with_name(f".{git_dir.name}.{os.getpid()}.{threading.get_ident()}")
    subprocess.run(
        ["git", "init", "-q", "--bare", "--template=", str(staging)],
        check=True,
        capture_output=True,
        env={**os.environ, **GIT_QUIET},
    )
    try:
        staging.rename(git_dir)
    except OSError:  # another thread made it first
        shutil.rmtree(staging, ignore_errors=True)
    return git_dir


def submodules(source: Path, tree: str) -> list[str]:
    """Paths of the submodules (gitlinks) in ``tree``, read in ``source``'s repository.

    On the coordinator: its git, without the caller's git redirections.
    """
    out = git(["ls-tree", "-r", "-z", "--full-tree", tree], cwd=source).stdout
    links: list[str] = []
    for entry in out.split(b"\0"):
        meta, _, path = entry.partition(b"\t")
        if meta.startswith(b"160000 "):
            links.append(os.fsdecode(path))
    return links

"""Running git on a repository changeloop names, and where that repository sits.

Every git process changeloop starts goes through :func:`git` with :func:`git_env`:
the caller's environment minus the variables that would point git at another
repository (``GIT_REDIRECTS``), never taking optional locks, in the C locale; a
failure is a ``ChangeloopError`` naming the command. :func:`layout` answers where a
repository path sits in its work tree (content identity, sandboxes, submodules).
"""

from __future__ import annotations

import hashlib
import os
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from changeloop.errors import ChangeloopError, Problem

# Variables that point git somewhere other than the working directory's repository.
GIT_REDIRECTS = (
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_COMMON_DIR",
    "GIT_PREFIX",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
)


def git_env(
    index_file: Path | None = None, extra: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The caller's environment minus git redirections, plus our own settings."""
    env = {k: v for k, v in os.environ.items() if k not in GIT_REDIRECTS}
    # Never let a read-only helper refresh the user's index as a side effect.
    env["GIT_OPTIONAL_LOCKS"] = "0"
    env["LC_ALL"] = "C"
    if index_file is not None:
        env["GIT_INDEX_FILE"] = str(index_file)
    if extra:
        env.update(extra)
    return env


def git(
    args: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str] | None = None,
    check: bool = True,
    input_bytes: bytes | None = None,
) -> subprocess.CompletedProcess[bytes]:
    """Run one git command; a failure becomes a ``ChangeloopError`` naming it."""
    proc = subprocess.run(
        ["git", *args],
        cwd=cwd,
        env=dict(env) if env is not None else git_env(),
        input=input_bytes,
        capture_output=True,
        check=False,
    )
    if check and proc.returncode != 0:
        raise ChangeloopError(
            Problem(
                code="git_failed",
                message=f"git {' '.join(args)} failed in {cwd}: "
                f"{proc.stderr.decode(errors='replace').strip()}",
                fix="check that the repository path is a readable git work tree",
            ),
            exit_code=1,
        )
    return proc


@dataclass(frozen=True)
class GitLayout:
    """Where a repository path sits inside its git work tree."""

    toplevel: Path
    prefix: str  # "" or "sub/dir/" (with the trailing slash, as git prints it)
    index: Path  # the user's index file (may not exist yet)
    git_dir: Path  # the common git directory (objects, worktrees/)
    head: str | None  # HEAD commit, None in a repository with no commits
    object_format: str = "sha1"  # "sha1" or "sha256": a sandbox's repository must match


def layout(repo: Path, *, head: bool = True) -> GitLayout:
    """Locate ``repo`` inside its git work tree; refuse a path that is not one.

    ``head=False`` skips looking up HEAD (one git process): for a tree id alone.
    """
    if not repo.is_dir():
        raise ChangeloopError(
            Problem(
                code="repository_missing",
                message=f"repository path {repo} does not exist or is not a directory",
                fix="fix the path under `repositories:` in evidence.yaml",
            )
        )
    proc = git(
        [
            "rev-parse",
            "--show-toplevel",
            "--show-prefix",
            "--git-path",
            "index",
            "--git-common-dir",
            "--show-object-format",
        ],
        cwd=repo,
        check=False,
    )
    lines = proc.stdout.decode().splitlines()
    if proc.returncode != 0 or len(lines) < 5:
        raise ChangeloopError(
            Problem(
                code="not_a_git_work_tree",
                message=f"repository path {repo} is not inside a git work tree",
                fix=f"run `git init` in {repo}, or point `repositories:` at a git checkout",
            )
        )
    top, prefix, index, common, object_format = lines[:5]
    commit = None
    if head:
        head_proc = git(["rev-parse", "-q", "--verify", "HEAD^{commit}"], cwd=repo, check=False)
        commit = head_proc.stdout.decode().strip() or None
    return GitLayout(
        toplevel=Path(top),
        prefix=prefix,
        index=(repo / index).resolve(),
        git_dir=(repo / common).resolve(),
        head=commit,
        object_format=object_format,
    )


def common_dir(cwd: Path, env: Mapping[str, str] | None = None) -> Path:
    """The common git directory of the repository at ``cwd`` (``info/`` lives there), found
    without running git: ``GIT_DIR`` in ``env``, else the nearest ``.git`` folder or
    ``gitdir:`` file (a linked worktree's ``commondir`` followed)."""
    if env is not None and env.get("GIT_DIR"):
        return Path(env["GIT_DIR"])
    for folder in (cwd, *cwd.parents):
        dot = folder / ".git"
        if dot.is_dir():
            return dot
        if dot.is_file():
            try:
                text = dot.read_text(encoding="utf-8").strip()
                linked = (folder / text.removeprefix("gitdir:").strip()).resolve()
                common = linked / "commondir"
                if common.is_file():
                    return (linked / common.read_text(encoding="utf-8").strip()).resolve()
            except OSError:
                return dot
            return linked
    return cwd / ".git"


def excludes_digest(workdir: Path) -> str:
    """sha256 of the ignore files outside every tree: the repository's ``info/exclude`` and
    the user's global ``git/ignore``. With the content tree unchanged, a path keeps the
    ignore status it had while these keep their bytes (the no-change record checks it)."""
    config = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    parts: list[str] = []
    for path in (common_dir(workdir) / "info" / "exclude", Path(config) / "git" / "ignore"):
        try:
            parts.append(hashlib.sha256(path.read_bytes()).hexdigest())
        except OSError:
            parts.append("-")
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()

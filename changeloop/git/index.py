"""The temporary index a content identity is staged in (never the user's index file)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from pathlib import Path

from changeloop.git.repo import GitLayout, git, git_env


def seed_index(lay: GitLayout, tmp_index: Path, cwd: Path) -> None:
    """Start the temporary index from the user's (stat cache) or from HEAD."""
    if lay.index.is_file():
        # copy2 keeps the index's mtime: git's racy-clean check compares entry
        # mtimes against it, and a fresh mtime would make same-size edits made in
        # the same second as the last `git add` look unchanged.
        shutil.copy2(lay.index, tmp_index)
    elif lay.head is not None:
        git(["read-tree", "HEAD"], cwd=cwd, env=git_env(tmp_index))


def stage(cwd: Path, env: Mapping[str, str], *, include_untracked: bool) -> None:
    """Bring the temporary index to the working-tree content of ``cwd``'s subtree."""
    mode = "-A" if include_untracked else "-u"
    spec = [".", *virtualenv_excludes(cwd)] if include_untracked else ["."]
    git(["-c", "advice.addEmbeddedRepo=false", "add", mode, "--", *spec], cwd=cwd, env=env)


def virtualenv_excludes(cwd: Path) -> list[str]:
    """Pathspecs leaving out top-level virtualenvs (a directory holding ``pyvenv.cfg``).

    A virtualenv is an installation, never source, yet Python < 3.13 does not
    ignore it itself: without this, an un-ignored ``.venv/`` of thousands of
    files would become part of the content identity
    (docs/decisions/021-a-virtualenv-is-never-content.md).
    """
    try:
        entries = list(os.scandir(cwd))
    except OSError:
        return []
    venvs = sorted(
        entry.name
        for entry in entries
        if entry.is_dir(follow_symlinks=False) and (Path(entry.path) / "pyvenv.cfg").is_file()
    )
    if not venvs:
        return []
    # An exclude pathspec naming an ignored path makes `git add` fail ("paths are
    # ignored", git 2.39): an ignored virtualenv is left out by git already.
    ignored = git(["check-ignore", "--", *venvs], cwd=cwd, check=False).stdout.decode()
    skip = {line.strip().rstrip("/") for line in ignored.splitlines()}
    return [f":(exclude){name}" for name in venvs if name not in skip]

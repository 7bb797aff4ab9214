"""Sandboxes of unusual user repositories: shallow, sha256, a linked worktree, legacy leftovers.

Each sandbox must be a working repository of its own (``git log``, ``git
describe``, ``git status`` inside) without touching the user's.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from sandbox_helpers import git, make_repo, write
from test_sandbox_isolation import user_bytes

from changeloop import sandboxes
from changeloop.model import Repository, SandboxMode

MODES: list[SandboxMode] = ["copy", "worktree"]


def _history(path: Path, commits: int) -> Path:
    make_repo(path, {"a.txt": "0\n"})
    for i in range(1, commits):
        write(path, {"a.txt": f"{i}\n"})
        git(path, "commit", "-q", "-am", f"c{i}")
        git(path, "tag", f"v0.{i}")
    return path


def _works_inside(box: sandboxes.Sandbox, user_head: str) -> None:
    assert git(box.path, "rev-parse", "HEAD~1") == user_head
    git(box.path, "log", "--oneline")  # walks the history without a missing object
    assert git(box.path, "status", "--porcelain", "--untracked-files=no") == ""
    git(box.path, "commit", "-q", "--allow-empty", "-m", "inside")
    git(box.path, "tag", "inside")


@pytest.mark.parametrize("mode", MODES)
def test_shallow_clone(tmp_path: Path, mode: SandboxMode) -> None:
    """CI's usual checkout: the sandbox keeps the shallow boundary, or `git log` fails."""
    origin = _history(tmp_path / "origin", 4)
    clone = tmp_path / "clone"
    subprocess.run(
        ["git", "clone", "-q", "--depth", "1", f"file://{origin}", str(clone)],
        check=True,
        capture_output=True,
    )
    assert (clone / ".git/shallow").is_file()
    before = user_bytes(clone)
    box = sandboxes.create(mode, Repository(name="c", path=clone, relpath="."), tmp_path / "b")
    try:
        _works_inside(box, git(clone, "rev-parse", "HEAD"))
        assert len(git(box.path, "log", "--oneline").splitlines()) == 3  # inside + content + HEAD
    finally:
        box.remove()
    assert user_bytes(clone) == before


@pytest.mark.parametrize("mode", MODES)
def test_sha256_repository(tmp_path: Path, mode: SandboxMode) -> None:
    path = tmp_path / "sha256"
    path.mkdir()
    git(path, "init", "-q", "--object-format=sha256", "-b", "main")
    write(path, {"a.txt": "a\n"})
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "i")
    write(path, {"a.txt": "dirty\n"})
    before = user_bytes(path)
    box = sandboxes.create(mode, Repository(name="s", path=path, relpath="."), tmp_path / "b")
    try:
        _works_inside(box, git(path, "rev-parse", "HEAD"))
        assert len(box.identity.tree) == 64
        assert (box.path / "a.txt").read_text() == "dirty\n"
    finally:
        box.remove()
    assert user_bytes(path) == before


@pytest.mark.parametrize("mode", MODES)
def test_user_checkout_is_a_linked_worktree(tmp_path: Path, mode: SandboxMode) -> None:
    main = _history(tmp_path / "main", 2)
    linked = tmp_path / "linked"
    git(main, "worktree", "add", "-q", "-b", "topic", str(linked))
    write(linked, {"a.txt": "topic work\n"})
    before_main, before_linked = user_bytes(main), user_bytes(linked)
    repo = Repository(name="l", path=linked, relpath=".")
    box = sandboxes.create(mode, repo, tmp_path / "b")
    try:
        assert git(box.path, "describe", "--tags").startswith("v0.1-1-g")
        assert (box.path / "a.txt").read_text() == "topic work\n"
        _works_inside(box, git(linked, "rev-parse", "HEAD"))
    finally:
        box.remove()
    assert user_bytes(main) == before_main
    assert user_bytes(linked) == before_linked


def test_legacy_worktree_leftover_is_still_pruned(tmp_path: Path) -> None:
    """A crashed run of an older changeloop left a linked worktree: cleanup forgets it."""
    repo = _history(tmp_path / "r", 2)
    boxes = tmp_path / "boxes"
    boxes.mkdir()
    dead = boxes / "r.999999999-1.deadbeef"  # a pid that cannot be running
    git(repo, "worktree", "add", "-q", "--detach", str(dead))
    assert len(git(repo, "worktree", "list").splitlines()) == 2
    assert sandboxes.cleanup_stale(boxes) == [dead]
    assert not dead.exists()
    assert len(git(repo, "worktree", "list").splitlines()) == 1

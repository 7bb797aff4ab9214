"""Content identity (docs/receipts.md) against trees computed with plain git commands."""

from __future__ import annotations

import os
from pathlib import Path

from sandbox_helpers import commit_all, git, make_repo, reference_tree, user_state, write

from changeloop.git.identity import content_identity

FILES = {
    "src/app.py": "print('hi')\n",
    "README.md": "# r\n",
    ".gitignore": "build/\n",
    "openspec/changes/c/evidence.yaml": "version: 3\n",
}


def test_clean_repo_matches_plain_git_and_is_not_dirty(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", FILES)
    ident = content_identity(repo, include_untracked=True)
    assert ident.tree == reference_tree(repo, tmp_path, include_untracked=True)
    assert ident.head == git(repo, "rev-parse", "HEAD")
    assert ident.dirty is False
    # openspec/ is left out, everything else is there.
    names = git(repo, "ls-tree", "--name-only", ident.tree).splitlines()
    assert names == [".gitignore", "README.md", "src"]


def test_dirty_content_untracked_and_ignored(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", FILES)
    clean = content_identity(repo, include_untracked=True).tree
    before = user_state(repo)
    write(repo, {"src/app.py": "print('changed')\n", "new.txt": "n\n", "build/out.o": "x"})
    (repo / "README.md").unlink()
    with_untracked = content_identity(repo, include_untracked=True)
    tracked_only = content_identity(repo, include_untracked=False)
    assert with_untracked.tree == reference_tree(repo, tmp_path, include_untracked=True)
    assert tracked_only.tree == reference_tree(repo, tmp_path, include_untracked=False)
    assert with_untracked.dirty and tracked_only.dirty
    assert len({clean, with_untracked.tree, tracked_only.tree}) == 3
    names = git(repo, "ls-tree", "-r", "--name-only", with_untracked.tree).splitlines()
    assert "new.txt" in names and "build/out.o" not in names and "README.md" not in names
    assert "new.txt" not in git(repo, "ls-tree", "-r", "--name-only", tracked_only.tree)
    # The tree is a real object; no ref, HEAD, index byte or status of the user moved.
    assert git(repo, "cat-file", "-t", with_untracked.tree) == "tree"
    after = user_state(repo)
    assert after[:3] == before[:3]


def test_openspec_edits_and_commits_do_not_change_identity(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", FILES)
    first = content_identity(repo, include_untracked=True)
    write(
        repo, {"openspec/changes/c/receipts/r.json": "{}", "openspec/changes/c/evidence.yaml": "v"}
    )
    assert content_identity(repo, include_untracked=True).tree == first.tree
    commit_all(repo, "docs")
    second = content_identity(repo, include_untracked=True)
    assert second.tree == first.tree and second.dirty is False
    # A nested openspec/ is ordinary content.
    write(repo, {"src/openspec/x": "x"})
    assert content_identity(repo, include_untracked=True).tree != first.tree


def test_same_content_same_id_across_commits(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", FILES)
    first = content_identity(repo, include_untracked=False).tree
    write(repo, {"x": "1"})
    commit_all(repo)
    (repo / "x").unlink()
    commit_all(repo)
    assert content_identity(repo, include_untracked=False).tree == first


def test_repository_without_commits(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", {"a.txt": "a\n", "openspec/x": "x"}, commit=False)
    ident = content_identity(repo, include_untracked=True)
    assert ident.head is None and ident.dirty is True
    assert ident.tree == reference_tree(repo, tmp_path, include_untracked=True)
    assert git(repo, "ls-tree", "--name-only", ident.tree) == "a.txt"
    # Nothing tracked yet: the tracked-only content is the empty tree.
    empty = content_identity(repo, include_untracked=False).tree
    assert git(repo, "ls-tree", empty) == ""
    assert not (repo / ".git" / "index").exists()


def test_staged_new_file_counts_as_tracked(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", FILES)
    write(repo, {"staged.txt": "s"})
    git(repo, "add", "staged.txt")
    tracked = content_identity(repo, include_untracked=False)
    assert "staged.txt" in git(repo, "ls-tree", "--name-only", tracked.tree)
    assert tracked.tree == reference_tree(repo, tmp_path, include_untracked=False)


def test_subdirectory_repository(tmp_path: Path) -> None:
    mono = make_repo(
        tmp_path / "mono",
        {
            "openspec/top.md": "workspace docs\n",
            "svc/main.py": "x = 1\n",
            "svc/openspec/changes/c/evidence.yaml": "version: 3\n",
            "svc/lib/openspec/keep.txt": "kept\n",
            "other/file.txt": "o\n",
        },
    )
    svc = mono / "svc"
    ident = content_identity(svc, include_untracked=True)
    assert ident.tree == reference_tree(svc, tmp_path, include_untracked=True, prefix="svc/")
    assert ident.dirty is False
    names = git(mono, "ls-tree", "-r", "--name-only", ident.tree).splitlines()
    assert names == ["lib/openspec/keep.txt", "main.py"]
    # Edits outside the subdirectory do not change it; edits inside do.
    write(mono, {"other/file.txt": "changed", "other/new": "n"})
    assert content_identity(svc, include_untracked=True).tree == ident.tree
    write(svc, {"new.py": "y = 2\n"})
    changed = content_identity(svc, include_untracked=True)
    assert changed.tree != ident.tree and changed.dirty
    assert changed.tree == reference_tree(svc, tmp_path, include_untracked=True, prefix="svc/")
    assert content_identity(svc, include_untracked=False).tree == ident.tree


def test_symlinks_and_modes_are_content(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", {"run.sh": "#!/bin/sh\n"})
    first = content_identity(repo, include_untracked=False).tree
    os.chmod(repo / "run.sh", 0o755)
    second = content_identity(repo, include_untracked=False).tree
    assert second != first
    (repo / "link").symlink_to("run.sh")
    third = content_identity(repo, include_untracked=True)
    assert "120000" in git(repo, "ls-tree", third.tree, "link")

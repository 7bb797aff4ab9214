"""The no-change check's tree id, hashed in-process, is git's to the bit (issue 15).

``identity.content_tree(..., expected=...)`` leaves the top-level ``openspec`` out
of the staged tree by hashing the loose tree object itself instead of running
``git ls-tree`` and ``git mktree``. Every case here compares with plain git
(``content_identity``, which still goes through ``mktree``), in SHA-1 and SHA-256
repositories, with and without ``openspec/``, at the top and in a subdirectory,
with the top-level tree loose and packed.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from changeloop.git.identity import (
    OPENSPEC,
    _staged_tree,
    _without_openspec,
    content_identity,
    content_tree,
)
from changeloop.git.loose_tree import top_without
from changeloop.git.repo import git_env, layout

FILES = {
    "a.py": "A = 1\n",
    "src/b.py": "B = 1\n",
    "sub/c.py": "C = 1\n",
    "sub/openspec/x.md": "x\n",
    "openspec/changes/c/evidence.yaml": "version: 3\n",
    "openspec.txt": "a file whose name starts like openspec\n",
    "openspec-notes/y.md": "y\n",
}


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, text=True
    ).stdout.strip()


def _repo(path: Path, object_format: str, *, with_openspec: bool = True) -> Path:
    path.mkdir(parents=True)
    _git(path, "init", "-q", f"--object-format={object_format}")
    for name, text in FILES.items():
        if not with_openspec and name.startswith("openspec/"):
            continue
        target = path / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    _git(path, "add", "-A")
    _git(path, "commit", "-q", "-m", "init")
    return path


def _exists(repo: Path, oid: str) -> bool:
    return subprocess.run(["git", "cat-file", "-e", oid], cwd=repo, check=False).returncode == 0


@pytest.mark.parametrize("object_format", ["sha1", "sha256"])
@pytest.mark.parametrize("with_openspec", [True, False])
@pytest.mark.parametrize("where", ["", "sub"])
def test_the_quick_tree_is_gits_tree(
    tmp_path: Path, object_format: str, with_openspec: bool, where: str
) -> None:
    top = _repo(tmp_path / "r", object_format, with_openspec=with_openspec)
    repo = top / where if where else top
    for edit in (None, "a.py", "new.txt"):
        if edit is not None:
            (repo / edit).write_text("changed\n")
        for untracked in (True, False):
            truth = content_identity(repo, include_untracked=untracked).tree
            assert content_tree(repo, include_untracked=untracked, expected=truth) == truth
            # a stale expectation: git writes the tree, which the full path then reads
            stale = "0" * len(truth)
            assert content_tree(repo, include_untracked=untracked, expected=stale) == truth
            assert content_tree(repo, include_untracked=untracked) == truth


@pytest.mark.parametrize("object_format", ["sha1", "sha256"])
def test_the_in_process_hash_is_mktrees(tmp_path: Path, object_format: str) -> None:
    """Not only the same answer: the in-process path is the one taken, and agrees."""
    repo = _repo(tmp_path / "r", object_format)
    (repo / "new.txt").write_text("new\n")
    lay = layout(repo.resolve(), head=False)
    index = tmp_path / "index"
    env = git_env(index)
    full = _staged_tree(repo.resolve(), lay, env, index, True)
    quick = top_without(lay, full, OPENSPEC)
    assert quick is not None and quick != full  # openspec/ was there and left out
    assert quick == _without_openspec(repo, env, full, "")[0]
    assert top_without(lay, full, "no-such-entry") == full


def test_a_changed_content_writes_its_tree_for_the_full_path(tmp_path: Path) -> None:
    repo = _repo(tmp_path / "r", "sha1")
    before = content_identity(repo, include_untracked=True).tree
    (repo / "a.py").write_text("A = 2\n")
    after = content_tree(repo, include_untracked=True, expected=before)
    assert after != before
    assert _exists(repo, after)  # identity_of_tree lists it next
    assert after == content_identity(repo, include_untracked=True).tree


def test_a_packed_top_level_tree_is_answered_by_git(tmp_path: Path) -> None:
    """No loose object to hash (``git gc`` packed it): git's ls-tree/mktree answer."""
    repo = _repo(tmp_path / "r", "sha1")
    truth = content_identity(repo, include_untracked=True).tree
    _git(repo, "gc", "-q", "--prune=now")
    lay = layout(repo.resolve(), head=False)
    index = tmp_path / "index"
    full = _staged_tree(repo.resolve(), lay, git_env(index), index, True)
    assert not (lay.git_dir / "objects" / full[:2] / full[2:]).exists()
    assert top_without(lay, full, OPENSPEC) is None
    assert content_tree(repo, include_untracked=True, expected=truth) == truth


def test_a_loose_object_that_does_not_hash_to_its_name_is_not_believed(tmp_path: Path) -> None:
    import zlib

    repo = _repo(tmp_path / "r", "sha1")
    lay = layout(repo.resolve(), head=False)
    index = tmp_path / "index"
    full = _staged_tree(repo.resolve(), lay, git_env(index), index, True)
    path = lay.git_dir / "objects" / full[:2] / full[2:]
    path.chmod(0o644)
    path.write_bytes(zlib.compress(b"tree 0\0"))  # the empty tree, under another name
    assert top_without(lay, full, OPENSPEC) is None

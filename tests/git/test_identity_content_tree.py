"""The no-change check's tree (``identity.content_tree``) is the full path's, to the bit.

Compared with ``content_identity`` in SHA-1 and SHA-256 repositories, with and
without ``openspec/``, at the top and in a subdirectory, before and after edits,
with and without untracked files.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from changeloop.git.identity import content_identity, content_tree

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
def test_the_content_tree_is_the_identitys_tree(
    tmp_path: Path, object_format: str, with_openspec: bool, where: str
) -> None:
    top = _repo(tmp_path / "r", object_format, with_openspec=with_openspec)
    repo = top / where if where else top
    for edit in (None, "a.py", "new.txt"):
        if edit is not None:
            (repo / edit).write_text("changed\n")
        for untracked in (True, False):
            truth = content_identity(repo, include_untracked=untracked).tree
            assert content_tree(repo, include_untracked=untracked) == truth


def test_a_changed_content_writes_its_tree_for_the_full_path(tmp_path: Path) -> None:
    repo = _repo(tmp_path / "r", "sha1")
    before = content_identity(repo, include_untracked=True).tree
    (repo / "a.py").write_text("A = 2\n")
    after = content_tree(repo, include_untracked=True)
    assert after != before
    assert _exists(repo, after)  # identity_of_tree lists it next
    assert after == content_identity(repo, include_untracked=True).tree

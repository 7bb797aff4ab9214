"""The worker's tree check (``executors.content.tree_of``) agrees with the content identity.

A worker recomputes the tree of the sandbox it materialized; it must be the
tree ``changeloop.git.identity`` computed on the coordinator for the same files,
or every job would fail ``content-mismatch`` (or, worse, a changed file pass).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from repo_helpers import make_repo

from changeloop.executors import content
from changeloop.git.identity import content_identity


def _tricky_repo(path: Path) -> Path:
    root = make_repo(
        path,
        {
            "src/app.py": "x = 1\n",
            "openspec/changes/c1/evidence.yaml": "version: 3\n",
            "docs/openspec": "a file named openspec, not at the top: part of the tree\n",
            "run.sh": "#!/bin/sh\nexit 0\n",
        },
    )
    (root / "run.sh").chmod(0o755)
    os.symlink("src/app.py", root / "link.py")
    (root / "untracked.txt").write_text("travels\n")
    return root


def test_the_worker_tree_is_the_content_identity(tmp_path: Path) -> None:
    root = _tricky_repo(tmp_path / "ws")
    expected = content_identity(root, include_untracked=True).tree
    shipped = content.pack(root, [p for p in _files(root) if not p.startswith(".git/")])
    for hashing in (None, tmp_path / "worker" / "hash.git", tmp_path / "worker" / "hash.git"):
        box = tmp_path / f"box-{hashing is None}"
        shutil.rmtree(box, ignore_errors=True)
        content.unpack(shipped, box)
        assert content.tree_of(box, hashing) == expected
    assert (tmp_path / "worker" / "hash.git" / "HEAD").is_file()  # made once, reused


def test_one_changed_byte_changes_the_worker_tree(tmp_path: Path) -> None:
    root = _tricky_repo(tmp_path / "ws")
    expected = content_identity(root, include_untracked=True).tree
    box = tmp_path / "box"
    content.unpack(content.pack(root, [p for p in _files(root) if not p.startswith(".git/")]), box)
    (box / "src" / "app.py").write_text("x = 2\n")
    assert content.tree_of(box, tmp_path / "hash.git") != expected
    (box / "src" / "app.py").write_text("x = 1\n")
    (box / "openspec" / "changes" / "c1" / "evidence.yaml").write_text("edited\n")
    assert content.tree_of(box, tmp_path / "hash.git") == expected  # openspec/ is not content


def _files(root: Path) -> list[str]:
    out: list[str] = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d != ".git"]
        out.extend(Path(folder, f).relative_to(root).as_posix() for f in files)
    return sorted(out)

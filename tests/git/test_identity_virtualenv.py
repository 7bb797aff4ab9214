"""An un-ignored virtualenv is an installation, not content: it never enters the identity."""

from __future__ import annotations

import sys
from pathlib import Path

from prove_helpers import make_repo

from changeloop import sandboxes
from changeloop.git.identity import content_identity
from changeloop.model import Repository


def _venv(repo: Path) -> None:
    site = repo / ".venv" / "lib" / "python3.11" / "site-packages"
    site.mkdir(parents=True)
    (repo / ".venv" / "pyvenv.cfg").write_text(f"home = {Path(sys.executable).parent}\n")
    (site / "thing.py").write_text("x = 1\n")


def test_untracked_virtualenv_does_not_change_the_identity(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", {"src/app.py": "print(1)\n"})
    before = content_identity(repo, include_untracked=True)
    _venv(repo)
    assert content_identity(repo, include_untracked=True) == before
    # an ordinary untracked directory still counts
    (repo / "notes").mkdir()
    (repo / "notes" / "n.txt").write_text("n\n")
    assert content_identity(repo, include_untracked=True).tree != before.tree


def test_copy_sandbox_leaves_the_virtualenv_out(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", {"src/app.py": "print(1)\n"})
    _venv(repo)
    box = sandboxes.create("copy", Repository("r", repo, "r"), tmp_path / "boxes")
    try:
        assert (box.path / "src" / "app.py").is_file()
        assert not (box.path / ".venv").exists()
        assert box.identity.tree == content_identity(repo, include_untracked=True).tree
    finally:
        box.remove()

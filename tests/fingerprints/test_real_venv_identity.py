"""An ignored in-repo virtualenv never breaks prove; a git failure at identity time refuses.

Shape of humanize/platformdirs after the documented setup: `.venv/` listed in
.gitignore, a real virtualenv inside the repository (git 2.39 refuses an exclude
pathspec that names an ignored path, "paths are ignored").
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from prove_helpers import git, make_change, make_repo, prove_json

EVIDENCE = """\
    version: 3
    requires: [check]
"""
EXECUTION = """\
    version: 1
    providers:
      check:
        adapter: command
        command: [sh, -c, "test -f a.txt"]
"""


def _workspace(tmp_path: Path, ignore: str) -> Path:
    root = make_repo(tmp_path / "ws", {"a.txt": "a\n", ".gitignore": ignore})
    make_change(root, "c1", EVIDENCE, EXECUTION)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "change")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root / ".venv")], check=True)
    return root


@pytest.mark.parametrize("ignore", [".venv/\n", ".venv\n", "/.venv/\n"])
@pytest.mark.parametrize("sandbox", ["none", "copy", "worktree"])
def test_ignored_venv_is_neither_content_nor_an_error(
    tmp_path: Path, capsys: Any, ignore: str, sandbox: str
) -> None:
    root = _workspace(tmp_path, ignore)
    code, doc = prove_json(root, "c1", "--sandbox", sandbox, capsys=capsys)
    assert code == 0, doc
    assert doc["status"] == "proven"


def test_unignored_venv_is_still_left_out_of_content(tmp_path: Path, capsys: Any) -> None:
    from changeloop.git.identity import content_identity

    root = _workspace(tmp_path, "")
    with_venv = content_identity(root, include_untracked=True)
    listing = git(root, "ls-tree", "-r", "--name-only", with_venv.tree)
    assert ".venv" not in listing and "a.txt" in listing
    code, doc = prove_json(root, "c1", "--sandbox", "none", capsys=capsys)
    assert code == 0, doc


def test_git_failure_at_identity_time_is_a_refusal_naming_git(tmp_path: Path, capsys: Any) -> None:
    root = _workspace(tmp_path, ".venv/\n")
    nested = root / "nested"  # an untracked repository without a commit: git add refuses it
    nested.mkdir()
    git(nested, "init", "-q")
    (nested / "x").write_text("x\n")
    code, doc = prove_json(root, "c1", "--sandbox", "none", capsys=capsys)
    assert code == 2
    err = doc["errors"][0]
    assert err["code"] == "git_failed"
    assert "nested" in err["message"]
    assert "readable git work tree" not in (err.get("fix") or "")

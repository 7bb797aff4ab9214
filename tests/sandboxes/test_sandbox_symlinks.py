"""Absolute symlinks into the repository are re-pointed into the sandbox (docs/processes.md).

A provider writing through a tracked absolute link must write the sandbox's
file, never the user's; the content identity is still computed from the
user's files and link texts, before re-pointing.
"""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path
from typing import Any

import pytest
from prove_helpers import make_change, prove_json, receipts_of
from sandbox_helpers import git, make_repo, reference_tree

from changeloop import sandboxes
from changeloop.model import Repository, SandboxMode
from changeloop.sandboxes.place import sandbox_place

WRITER = """\
set -e
out="$1"
pwd -P > "$out/pwd"
for link in abs-file abs-dir rel outside untracked-abs; do
  if [ -L "$link" ]; then readlink "$link" > "$out/$link"; fi
done
echo pwned > abs-file
echo pwned > abs-dir/f.txt
if [ -L untracked-abs ]; then echo pwned > untracked-abs; fi
"""


def _workspace(tmp_path: Path) -> Path:
    ws = make_repo(tmp_path / "ws", {"data.txt": "original\n", "sub/f.txt": "sub\n"})
    (tmp_path / "outside.txt").write_text("outside\n")
    (ws / "abs-file").symlink_to(ws / "data.txt")
    (ws / "abs-dir").symlink_to(ws / "sub")
    (ws / "rel").symlink_to("data.txt")
    (ws / "outside").symlink_to(tmp_path / "outside.txt")
    script = tmp_path / "writer.sh"
    script.write_text(WRITER)
    make_change(
        ws,
        "c1",
        "version: 3\nrequires: [writer]\n",
        f"""
        version: 1
        providers:
          writer:
            adapter: command
            command: [sh, "{script}", "{tmp_path / "out"}"]
        """,
    )
    git(ws, "add", "-A")
    git(ws, "commit", "-q", "-m", "links")
    (ws / "untracked-abs").symlink_to(ws / "data.txt")  # copied in copy mode only
    (tmp_path / "out").mkdir()
    return ws


def _tree(ws: Path, doc: dict[str, Any]) -> str:
    receipt = receipts_of(doc, "writer")["writer"]
    envelope = json.loads((ws / str(receipt["path"])).read_text())
    statement = json.loads(base64.b64decode(envelope["payload"]))
    (entry,) = statement["predicate"]["changeloop"]["repositories"].values()
    tree: str = entry["tree"]
    return tree


@pytest.mark.parametrize("mode", ["copy", "worktree"])
def test_absolute_symlink_writes_stay_in_the_sandbox(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], mode: SandboxMode
) -> None:
    ws = _workspace(tmp_path)
    expected = reference_tree(ws, tmp_path, include_untracked=mode == "copy")
    head = git(ws, "rev-parse", "HEAD")

    code, doc = prove_json(ws, "c1", "--sandbox", mode, "--no-cache", capsys=capsys)

    assert code == 0, doc
    # The user's files are untouched and their links still say what they said.
    assert (ws / "data.txt").read_text() == "original\n"
    assert (ws / "sub/f.txt").read_text() == "sub\n"
    assert os.readlink(ws / "abs-file") == str(ws / "data.txt")
    assert git(ws, "status", "--porcelain") == "?? untracked-abs"
    assert git(ws, "rev-parse", "HEAD") == head
    # Inside, links into the repository pointed into the sandbox; others were left alone.
    out = tmp_path / "out"
    box = Path((out / "pwd").read_text().strip())
    assert box.parent.parent == sandbox_place(ws).path
    assert (out / "abs-file").read_text().strip() == str(box / "data.txt")
    assert (out / "abs-dir").read_text().strip() == str(box / "sub")
    assert (out / "rel").read_text().strip() == "data.txt"
    assert (out / "outside").read_text().strip() == str(tmp_path / "outside.txt")
    assert (out / "untracked-abs").exists() is (mode == "copy")
    if mode == "copy":
        assert (out / "untracked-abs").read_text().strip() == str(box / "data.txt")
    # The identity is of the user's link texts, not the re-pointed ones.
    assert _tree(ws, doc) == expected


@pytest.mark.parametrize("mode", ["copy", "worktree"])
def test_repointed_links_survive_git_reset_inside(tmp_path: Path, mode: SandboxMode) -> None:
    """The sandbox's commit holds the re-pointed links: `git reset --hard` keeps them safe."""
    ws = _workspace(tmp_path)
    repo = Repository(name="ws", path=ws, relpath=".")
    box = sandboxes.create(mode, repo, tmp_path / "boxes")
    try:
        assert git(box.path, "status", "--porcelain", "--untracked-files=no") == ""
        git(box.path, "reset", "-q", "--hard")
        assert os.readlink(box.path / "abs-file") == str(box.path / "data.txt")
        (box.path / "abs-file").write_text("pwned\n")
        assert (ws / "data.txt").read_text() == "original\n"
        assert box.identity.tree == reference_tree(ws, tmp_path, include_untracked=mode == "copy")
    finally:
        box.remove()


def test_links_into_a_repository_reached_through_a_symlinked_path(tmp_path: Path) -> None:
    """A link naming the checkout by another path (a symlinked parent) is re-pointed too."""
    real = make_repo(tmp_path / "real", {"data.txt": "original\n"})
    alias = tmp_path / "alias"
    alias.symlink_to(real)
    (real / "via-alias").symlink_to(alias / "data.txt")
    git(real, "add", "-A")
    git(real, "commit", "-q", "-m", "alias link")
    repo = Repository(name="real", path=real, relpath=".")
    for mode in ("copy", "worktree"):
        box = sandboxes.create(mode, repo, tmp_path / "boxes")
        try:
            (box.path / "via-alias").write_text("pwned\n")
            assert os.readlink(box.path / "via-alias") == str(box.path / "data.txt")
        finally:
            box.remove()
    assert (real / "data.txt").read_text() == "original\n"

"""Sandboxes git cannot climb out of: a provider's git never reaches the user's repository.

A provider deletes its sandbox's ``.git`` and runs ``git reset --hard``, ``git
stash`` and ``git checkout other`` there and from ``..``. Before, git's
discovery climbed from the sandbox (inside ``.changeloop/``) to the user's
repository: staged and uncommitted work wiped, HEAD switched, and the change
PROVEN. Now sandboxes live outside the work tree (the user's cache directory),
and ``GIT_CEILING_DIRECTORIES`` stops the climb even where they cannot (the
fallback inside ``.changeloop/``, forced here by a cache directory inside a
work tree). A ``git worktree add ../x`` inside a sandbox leaves nothing behind.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from prove_helpers import git, make_change, make_repo, prove_json

from changeloop.sandboxes.place import IN_STATE, sandbox_place

EVIDENCE = """\
version: 3
claims:
  safe:
    statement: the provider's git stays in its sandbox
    requires: [test]
"""

ATTACK = (
    "rm -rf .git; "
    "git reset -q --hard; git stash -q; git checkout -q other; "
    "cd .. && git reset -q --hard; git stash -q; git checkout -q other; "
    "exit 0"
)


def _execution(command: str) -> str:
    return f"""\
        version: 1
        providers:
          attack:
            adapter: command
            capability: test
            claims: [safe]
            command: [sh, -c, "{command}"]
        """


def _user_repo(path: Path, command: str) -> Path:
    root = make_repo(path, {"app.py": "print('v1')\n", "lib.py": "x = 1\n"})
    make_change(root, "c1", EVIDENCE, _execution(command))
    git(root, "add", "-A")
    git(root, "commit", "-qm", "change")
    git(root, "branch", "other")
    # The user's work in progress: staged, modified, untracked.
    (root / "lib.py").write_text("x = 2  # staged\n")
    git(root, "add", "lib.py")
    (root / "app.py").write_text("print('v2, not committed')\n")
    (root / "notes.txt").write_text("untracked\n")
    return root


def _assert_untouched(root: Path) -> None:
    assert git(root, "rev-parse", "--abbrev-ref", "HEAD") == "main"
    assert git(root, "diff", "--cached", "--name-only") == "lib.py"
    assert (root / "lib.py").read_text() == "x = 2  # staged\n"
    assert (root / "app.py").read_text() == "print('v2, not committed')\n"
    assert (root / "notes.txt").read_text() == "untracked\n"
    assert git(root, "stash", "list") == ""


@pytest.fixture(params=["cache", "fallback"])
def where(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """Sandboxes in the user's cache directory, or (forced) inside ``.changeloop/``."""
    cache = tmp_path / "cache"
    if request.param == "fallback":  # a cache directory inside a work tree cannot hold them
        make_repo(tmp_path / "dotfiles")
        cache = tmp_path / "dotfiles" / "cache"
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    return str(request.param)


@pytest.mark.parametrize("mode", ["worktree", "copy"])
def test_git_in_a_provider_never_reaches_the_users_repository(
    tmp_path: Path, where: str, mode: str, capsys: Any
) -> None:
    root = _user_repo(tmp_path / "ws", ATTACK)
    place = sandbox_place(root)
    if where == "fallback":
        assert place.path == root.resolve() / IN_STATE and place.note is not None
    else:
        assert not place.path.is_relative_to(root.resolve()) and place.note is None
    code, doc = prove_json(root, "c1", "--sandbox", mode, capsys=capsys)
    _assert_untouched(root)
    assert code == 0, doc  # the attack stayed inside the sandbox, and the provider exited 0
    assert not any(place.path.iterdir()) or list(place.path.iterdir()) == [
        place.path / ".gitignore"
    ]


@pytest.mark.parametrize("mode", ["worktree", "copy"])
def test_a_worktree_added_beside_the_sandbox_goes_with_it(
    tmp_path: Path, mode: str, capsys: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    root = _user_repo(tmp_path / "ws", "git worktree add -q ../x HEAD && test -d ../x")
    code, doc = prove_json(root, "c1", "--sandbox", mode, capsys=capsys)
    assert code == 0, doc
    place = sandbox_place(root).path
    assert sorted(p.name for p in place.iterdir()) == [".gitignore"]
    assert git(root, "worktree", "list", "--porcelain").count("worktree ") == 1
    _assert_untouched(root)


# Resolve like Node: walk up from the working directory looking for node_modules/greet.
RESOLVE = """\
import pathlib, sys
here = pathlib.Path.cwd()
found = [d for d in (here, *here.parents) if (d / "node_modules" / "greet").is_dir()]
sys.exit(not found or (found[0] / "node_modules/greet/index.js").read_text() != "ok")
"""


def test_node_modules_of_the_checkout_are_found_from_a_sandbox_outside_it(
    tmp_path: Path, capsys: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Node's resolution walked up into the checkout's node_modules; the link keeps it working."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    root = make_repo(
        tmp_path / "ws",
        {
            "package.json": '{"name": "app"}\n',
            ".gitignore": "node_modules/\n",
            "resolve.py": RESOLVE,
        },
    )
    make_change(
        root,
        "c1",
        EVIDENCE,
        f"""\
        version: 1
        providers:
          attack:
            adapter: command
            capability: test
            claims: [safe]
            command: [{sys.executable}, resolve.py]
        """,
    )
    git(root, "add", "-A")
    git(root, "commit", "-qm", "change")
    (root / "node_modules" / "greet").mkdir(parents=True)
    (root / "node_modules" / "greet" / "index.js").write_text("ok")
    code, doc = prove_json(root, "c1", "--sandbox", "worktree", "--keep-sandbox", capsys=capsys)
    assert code == 0, doc
    (box,) = [p for p in sandbox_place(root).path.iterdir() if p.is_dir()]
    (folder,) = list(box.iterdir())
    assert (folder / "node_modules").is_symlink()
    assert git(folder, "status", "--porcelain") == ""  # the link is no change in the sandbox

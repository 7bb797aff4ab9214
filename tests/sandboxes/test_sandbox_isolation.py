"""A sandbox is a git repository of its own: git in a provider never reaches the user's.

docs/processes.md "Isolation" and docs/sandboxes.md. Each test runs the real CLI
(`prove --sandbox copy|worktree`) with a provider that runs git commands, and
compares the user's working tree, HEAD, index, refs, tags and `.git/config`
byte for byte before and after.
"""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path
from typing import Any

import pytest
from prove_helpers import make_change, prove_json, receipts_of
from sandbox_helpers import git, make_repo, reference_tree, write

from changeloop import sandboxes
from changeloop.model import Repository, SandboxMode
from changeloop.sandboxes.place import sandbox_place

# Every git command that used to reach the user's repository from a sandbox.
VANDAL = """\
set -e
out="$1"
git rev-parse --show-toplevel > "$out/toplevel"
git rev-parse --absolute-git-dir > "$out/git-dir"
git ls-files > "$out/ls-files"
git describe --tags > "$out/describe"
git rev-parse HEAD~1 > "$out/parent"
git status --porcelain --untracked-files=no > "$out/status"
git reset -q --hard
git config foo.bar baz
git branch x
git tag t
git tag -a ta -m annotated
git checkout -q -b feature
echo provider > a.txt
git commit -q -am "provider commit"
git reset -q --hard HEAD~1
git stash list > "$out/stash"
echo ok > "$out/done"
"""

FILES = {
    "a.txt": "a\n",
    "b.txt": "b\n",
    "src/m.py": "x = 1\n",
    ".gitignore": "build/\n",
}


def _workspace(tmp_path: Path) -> Path:
    ws = make_repo(tmp_path / "ws", FILES)
    script = tmp_path / "vandal.sh"
    script.write_text(VANDAL)
    make_change(
        ws,
        "c1",
        "version: 3\nrequires: [vandal]\n",
        f"""
        version: 1
        providers:
          vandal:
            adapter: command
            command: [sh, "{script}", "{tmp_path / "out"}"]
        """,
    )
    git(ws, "add", "-A")
    git(ws, "commit", "-q", "-m", "change")
    git(ws, "tag", "-a", "v1.2.3", "-m", "release")
    git(ws, "tag", "old", "HEAD~1")
    git(ws, "config", "user.name", "someone")
    # Uncommitted work of every kind: unstaged, staged, staged-new, untracked, ignored.
    write(ws, {"a.txt": "a, edited\n", "b.txt": "b, staged\n", "c.txt": "new, staged\n"})
    git(ws, "add", "b.txt", "c.txt")
    write(ws, {"u.txt": "untracked\n", "build/out.o": "ignored\n"})
    (tmp_path / "out").mkdir()
    return ws


def user_bytes(ws: Path) -> dict[str, bytes]:
    """The user's working tree and every git file a provider could move, byte for byte."""
    out: dict[str, bytes] = {}
    for dirpath, dirnames, files in os.walk(ws):
        rel_dir = Path(dirpath).relative_to(ws)
        if rel_dir == Path("."):
            dirnames[:] = [d for d in dirnames if d not in (".git", ".changeloop")]
        for name in files:
            out[f"wt:{(rel_dir / name).as_posix()}"] = (Path(dirpath) / name).read_bytes()
    gitdir = ws / ".git"
    for name in ("HEAD", "index", "config", "packed-refs", "FETCH_HEAD", "ORIG_HEAD"):
        p = gitdir / name
        out[f"git:{name}"] = p.read_bytes() if p.exists() else b"<absent>"
    for p in sorted((gitdir / "refs").rglob("*")):
        if p.is_file():
            out[f"git:{p.relative_to(gitdir).as_posix()}"] = p.read_bytes()
    out["refs"] = git(ws, "for-each-ref", "--format=%(refname) %(objectname)").encode()
    out["worktrees"] = git(ws, "worktree", "list", "--porcelain").encode()
    out["stash"] = git(ws, "stash", "list").encode()
    return out


def _extension(ws: Path, doc: dict[str, Any]) -> dict[str, Any]:
    receipt = receipts_of(doc, "vandal")["vandal"]
    envelope = json.loads((ws / str(receipt["path"])).read_text())
    statement = json.loads(base64.b64decode(envelope["payload"]))
    extension: dict[str, Any] = statement["predicate"]["changeloop"]
    return extension


@pytest.mark.parametrize("mode", ["copy", "worktree"])
def test_git_in_a_provider_never_reaches_the_user_repository(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], mode: SandboxMode
) -> None:
    ws = _workspace(tmp_path)
    head = git(ws, "rev-parse", "HEAD")
    before = user_bytes(ws)
    expected_tree = reference_tree(ws, tmp_path, include_untracked=mode == "copy")

    code, doc = prove_json(ws, "c1", "--sandbox", mode, "--no-cache", capsys=capsys)

    out = tmp_path / "out"
    assert (out / "done").read_text() == "ok\n", doc  # every git command worked inside
    assert code == 0, doc
    after = user_bytes(ws)
    assert {k: v for k, v in after.items() if before.get(k) != v} == {}
    assert after == before
    # Inside, git saw the sandbox's own repository, not the user's.
    boxes = sandbox_place(ws).path  # outside the checkout: the user's cache directory
    toplevel = Path((out / "toplevel").read_text().strip())
    assert toplevel.parent.parent == boxes and not toplevel.is_relative_to(ws)
    assert Path((out / "git-dir").read_text().strip()) == toplevel / ".git"
    listed = set((out / "ls-files").read_text().split())
    tracked = {
        "a.txt",
        "b.txt",
        "c.txt",
        "src/m.py",
        ".gitignore",
        "openspec/changes/c1/evidence.yaml",
        "openspec/changes/c1/execution.yaml",
    }
    assert listed == (tracked | {"u.txt"} if mode == "copy" else tracked)
    assert (out / "status").read_text() == ""  # the sandbox's index matches its files
    assert (out / "parent").read_text().strip() == head
    assert (out / "describe").read_text().startswith("v1.2.3-1-g")
    # The receipt names the user's HEAD and the content the provider saw.
    (entry,) = _extension(ws, doc)["repositories"].values()
    assert entry["head"] == head
    assert entry["tree"] == expected_tree
    assert not any(boxes.glob("ws.*"))  # removed after the run


@pytest.mark.parametrize("mode", ["copy", "worktree"])
def test_sandbox_is_its_own_reproducible_repository(tmp_path: Path, mode: SandboxMode) -> None:
    ws = _workspace(tmp_path)
    repo = Repository(name="ws", path=ws, relpath=".")
    before = user_bytes(ws)
    first = sandboxes.create(mode, repo, tmp_path / "boxes")
    second = sandboxes.create(mode, repo, tmp_path / "boxes")
    try:
        for box in (first, second):
            assert git(box.path, "rev-parse", "--show-toplevel") == str(box.path)
            assert git(box.path, "status", "--porcelain", "--untracked-files=no") == ""
            assert git(box.path, "rev-parse", "HEAD~1") == git(ws, "rev-parse", "HEAD")
            assert git(box.path, "rev-parse", "--abbrev-ref", "HEAD") == "HEAD"  # detached
            assert git(box.path, "tag", "--list") == "old\nv1.2.3"
            assert git(box.path, "remote") == ""  # nothing to push back to
            # Objects are borrowed, not copied: the sandbox holds its own commit at most.
            alternates = (box.path / ".git/objects/info/alternates").read_text().split()
            assert alternates == [str((ws / ".git/objects").resolve())]
        # Same content, same commit: fixed author and committer, the user's HEAD date.
        assert git(first.path, "rev-parse", "HEAD") == git(second.path, "rev-parse", "HEAD")
        assert git(first.path, "log", "-1", "--format=%an <%ae>|%cn <%ce>") == (
            "changeloop <changeloop@localhost>|changeloop <changeloop@localhost>"
        )
        assert git(first.path, "log", "-1", "--format=%ad|%cd", "--date=raw") == git(
            ws, "log", "-1", "--format=%cd|%cd", "--date=raw"
        )
        # The commit holds the sandbox's content, openspec/ included.
        assert (
            git(first.path, "ls-tree", "-r", "--name-only", "HEAD").split()
            == git(first.path, "ls-files").split()
        )
    finally:
        first.remove()
        second.remove()
    assert user_bytes(ws) == before


def test_subdirectory_repository_sandbox_is_isolated(tmp_path: Path) -> None:
    mono = make_repo(tmp_path / "mono", {"svc/main.py": "x = 1\n", "other/o.txt": "o\n"})
    write(mono, {"svc/main.py": "x = 2\n"})
    before = user_bytes(mono)
    repo = Repository(name="svc", path=mono / "svc", relpath="svc")
    for mode in ("copy", "worktree"):
        box = sandboxes.create(mode, repo, tmp_path / "boxes")
        try:
            git(box.path, "tag", "t")
            git(box.path, "commit", "-q", "--allow-empty", "-am", "inside")
            git(box.path, "config", "foo.bar", "baz")
            assert "main.py" in git(box.path, "ls-files")
            assert (box.path / "main.py").read_text() == "x = 2\n"
        finally:
            box.remove()
    assert user_bytes(mono) == before


@pytest.mark.parametrize("mode", ["copy", "worktree"])
def test_git_variables_inherited_from_a_hook_do_not_lead_a_provider_home(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    mode: SandboxMode,
) -> None:
    """changeloop run from a git hook inherits GIT_DIR/GIT_WORK_TREE/GIT_INDEX_FILE.

    A provider must still find its sandbox's own repository, not the user's one
    those variables point at.
    """
    ws = _workspace(tmp_path)
    before = user_bytes(ws)
    monkeypatch.setenv("GIT_DIR", str(ws / ".git"))
    monkeypatch.setenv("GIT_WORK_TREE", str(ws))
    monkeypatch.setenv("GIT_INDEX_FILE", str(ws / ".git" / "index"))

    code, doc = prove_json(ws, "c1", "--sandbox", mode, "--no-cache", capsys=capsys)

    assert (tmp_path / "out" / "done").read_text() == "ok\n", doc
    assert code == 0, doc
    monkeypatch.delenv("GIT_DIR")
    monkeypatch.delenv("GIT_WORK_TREE")
    monkeypatch.delenv("GIT_INDEX_FILE")
    assert {k for k, v in user_bytes(ws).items() if before.get(k) != v} == set()
    toplevel = Path((tmp_path / "out" / "toplevel").read_text().strip())
    assert toplevel.parent.parent == sandbox_place(ws).path

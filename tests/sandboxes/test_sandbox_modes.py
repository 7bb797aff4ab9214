"""Sandboxes: isolation from the source tree, identity of what they hold, cleanup."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from sandbox_helpers import git, make_repo, reference_tree, user_state, write

from changeloop import sandboxes
from changeloop.git.identity import content_identity
from changeloop.model import Repository, SandboxMode
from changeloop.sandboxes.base import owner_alive

FILES = {
    "src/app.py": "print('hi')\n",
    "src/data.txt": "data\n",
    "run.sh": "#!/bin/sh\necho run\n",
    ".gitignore": "build/\nnode_modules/\n",
    "openspec/changes/c/evidence.yaml": "version: 3\n",
}

# A provider that writes everywhere it can: in place, rename, delete, chmod, new file.
VANDAL = r"""
import os, pathlib
root = pathlib.Path.cwd()
(root / "src/app.py").write_text("vandalised\n")
with open(root / "src/data.txt", "r+") as f:
    f.seek(0); f.write("XXXX")
os.rename(root / "run.sh", root / "renamed.sh")
os.chmod(root / "renamed.sh", 0o700)
os.remove(root / ".gitignore")
(root / "brand-new.txt").write_text("new\n")
os.chmod(root / "src", 0o500)
(root / "untracked.txt").unlink(missing_ok=True)
"""


def _repo(tmp_path: Path) -> Repository:
    path = make_repo(tmp_path / "src-repo", FILES)
    os.chmod(path / "run.sh", 0o755)
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "exec bit")
    # Working-tree state a sandbox must reflect: a dirty tracked file, untracked, ignored.
    write(path, {"src/app.py": "print('dirty')\n", "untracked.txt": "u\n"})
    write(path, {"build/out.o": "obj", "node_modules/x/index.js": "x"})
    (path / "link").symlink_to("src/data.txt")
    return Repository(name="web", path=path, relpath="src-repo")


def _snapshot(root: Path) -> dict[str, tuple[int, bytes]]:
    out: dict[str, tuple[int, bytes]] = {}
    for dirpath, dirnames, files in os.walk(root):
        dirnames[:] = [d for d in dirnames if d != ".git"]
        for name in files + dirnames:
            p = Path(dirpath) / name
            st = p.lstat()
            data = (
                os.readlink(p).encode()
                if p.is_symlink()
                else (p.read_bytes() if p.is_file() else b"")
            )
            out[str(p.relative_to(root))] = (st.st_mode, data)
    return out


@pytest.mark.parametrize("mode", ["worktree", "copy"])
def test_no_provider_write_reaches_the_source(tmp_path: Path, mode: SandboxMode) -> None:
    repo = _repo(tmp_path)
    before_files, before_git = _snapshot(repo.path), user_state(repo.path)
    box = sandboxes.create(mode, repo, tmp_path / "boxes")
    assert box.mode == mode and box.path != repo.path
    assert (box.path / "src/app.py").read_text() == "print('dirty')\n"  # working-tree content
    assert not (box.path / "build").exists()
    # Ignored output is not copied; installed JavaScript dependencies are linked, not copied
    # (Node finds them as it did by walking up from a sandbox inside the checkout).
    assert os.readlink(box.path / "node_modules") == str(repo.path.resolve() / "node_modules")
    assert (box.path / "untracked.txt").exists() is (mode == "copy")
    assert os.stat(box.path / "run.sh").st_mode & 0o111
    subprocess.run([sys.executable, "-c", VANDAL], cwd=box.path, check=True)
    assert (box.path / "src/app.py").read_text() == "vandalised\n"  # the writes happened there
    assert _snapshot(repo.path) == before_files
    assert user_state(repo.path) == before_git
    box.remove()
    assert not box.path.exists()
    assert _snapshot(repo.path) == before_files
    assert "sandbox" not in git(repo.path, "worktree", "list")  # pruned
    assert len(git(repo.path, "worktree", "list").splitlines()) == 1


def test_identity_is_exactly_the_content_held(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    wt = sandboxes.create("worktree", repo, tmp_path / "boxes")
    cp = sandboxes.create("copy", repo, tmp_path / "boxes")
    none = sandboxes.create("none", repo, tmp_path / "boxes")
    assert wt.identity.tree == reference_tree(repo.path, tmp_path, include_untracked=False)
    assert cp.identity.tree == reference_tree(repo.path, tmp_path, include_untracked=True)
    assert none.identity == content_identity(repo.path, include_untracked=True)
    assert none.path == repo.path and cp.identity.tree == none.identity.tree
    assert wt.identity.dirty and cp.identity.dirty
    assert wt.identity.head == git(repo.path, "rev-parse", "HEAD")
    # openspec/ is in the sandbox (providers may read it) but not in the identity.
    assert (wt.path / "openspec/changes/c/evidence.yaml").exists()
    assert (cp.path / "openspec/changes/c/evidence.yaml").exists()
    # The symlink is copied as a symlink.
    assert os.readlink(cp.path / "link") == "src/data.txt"
    for box in (wt, cp, none):
        box.remove()
    assert repo.path.exists()


def test_clean_repository_is_not_dirty_in_any_mode(tmp_path: Path) -> None:
    path = make_repo(tmp_path / "clean", FILES)
    repo = Repository(name="r", path=path, relpath="clean")
    for mode in ("worktree", "copy", "none"):
        box = sandboxes.create(mode, repo, tmp_path / "boxes")
        assert box.identity.dirty is False, mode
        assert box.identity.tree == reference_tree(path, tmp_path, include_untracked=True)
        box.remove()


@pytest.mark.parametrize("mode", ["worktree", "copy", "none"])
def test_subdirectory_repository(tmp_path: Path, mode: SandboxMode) -> None:
    mono = make_repo(
        tmp_path / "mono",
        {
            "openspec/top.md": "t\n",
            "svc/main.py": "x = 1\n",
            "svc/openspec/x.md": "x\n",
            "other/o.txt": "o\n",
        },
    )
    write(mono, {"svc/main.py": "x = 2\n", "svc/extra.py": "e\n"})
    repo = Repository(name="svc", path=mono / "svc", relpath="svc")
    box = sandboxes.create(mode, repo, tmp_path / "boxes")
    assert (box.path / "main.py").read_text() == "x = 2\n"
    assert (box.path / "openspec/x.md").exists()
    include_untracked = mode != "worktree"
    assert (box.path / "extra.py").exists() is include_untracked
    expected = reference_tree(
        repo.path, tmp_path, include_untracked=include_untracked, prefix="svc/"
    )
    assert box.identity.tree == expected
    assert box.identity == content_identity(repo.path, include_untracked=include_untracked)
    if mode == "worktree":
        assert box.path.name == "svc" and (box.path.parent / "other/o.txt").exists()
    box.remove()
    assert (mono / "svc/main.py").read_text() == "x = 2\n"


def test_repository_without_commits(tmp_path: Path) -> None:
    path = make_repo(tmp_path / "fresh", {"a.txt": "a\n"}, commit=False)
    git(path, "add", "a.txt")
    repo = Repository(name="fresh", path=path, relpath="fresh")
    for mode in ("worktree", "copy"):
        box = sandboxes.create(mode, repo, tmp_path / "boxes")
        assert (box.path / "a.txt").read_text() == "a\n"
        assert box.identity.head is None
        assert box.identity.tree == reference_tree(path, tmp_path, include_untracked=True)
        box.remove()
    assert git(path, "for-each-ref") == ""


def test_not_a_git_work_tree_is_refused(tmp_path: Path) -> None:
    from changeloop.errors import ChangeloopError

    (tmp_path / "plain").mkdir()
    repo = Repository(name="plain", path=tmp_path / "plain", relpath="plain")
    with pytest.raises(ChangeloopError, match="not inside a git work tree"):
        sandboxes.create("copy", repo, tmp_path / "boxes")


def test_cleanup_stale_removes_only_dead_owners(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    boxes = tmp_path / "boxes"
    # A crashed run: a child process makes sandboxes and dies without removing them.
    script = (
        "import sys, os; from pathlib import Path; from changeloop import sandboxes; "
        "from changeloop.model import Repository; "
        f"r = Repository(name='web', path=Path({str(repo.path)!r}), relpath='x'); "
        f"[sandboxes.create(m, r, Path({str(boxes)!r})) for m in ('worktree', 'copy')]; "
        "os._exit(0)"
    )
    subprocess.run([sys.executable, "-c", script], check=True, cwd=tmp_path)
    stale = sorted(p for p in boxes.iterdir() if p.is_dir())
    assert len(stale) == 2 and all(owner_alive(p) is False for p in stale)
    # A sandbox is a repository of its own: nothing is registered in the user's.
    assert len(git(repo.path, "worktree", "list").splitlines()) == 1
    live = sandboxes.create("copy", repo, boxes)  # ours: this process is alive
    (boxes / "not-a-sandbox").mkdir()
    removed = sandboxes.cleanup_stale(boxes)
    assert sorted(removed) == stale
    assert not any(p.exists() for p in stale)
    assert live.path.exists() and (boxes / "not-a-sandbox").exists()
    assert len(git(repo.path, "worktree", "list").splitlines()) == 1
    assert (boxes / ".gitignore").read_text() == "*\n"
    live.remove()


def test_sandboxes_under_the_workspace_are_not_copied_into_each_other(tmp_path: Path) -> None:
    path = make_repo(tmp_path / "ws", FILES)
    (path / ".changeloop").mkdir()  # not ignored by the user's .gitignore
    repo = Repository(name="self", path=path, relpath=".")
    boxes = path / ".changeloop" / "sandboxes"
    first = sandboxes.create("copy", repo, boxes)
    second = sandboxes.create("copy", repo, boxes)
    assert not (second.path / ".changeloop").exists()
    assert first.identity.tree == second.identity.tree
    assert git(path, "status", "--porcelain") == ""
    first.remove()
    second.remove()


def test_copy_of_many_files_in_shared_directories(tmp_path: Path) -> None:
    """Every file arrives when parallel copy workers share parent directories.

    (The race this guards against — two `cp --parents` creating one directory —
    showed on bench/sandbox.py's 20,000 files; it is timing-dependent here.)
    """
    files = {f"src/d{i % 7}/sub{i % 3}/f{i}.txt": f"{i}\n" for i in range(3000)}
    repo_path = tmp_path / "many"
    make_repo(repo_path, files)
    repo = Repository(name="many", path=repo_path, relpath="many")
    box = sandboxes.create("copy", repo, tmp_path / "boxes")
    try:
        copied = sorted(p.relative_to(box.path).as_posix() for p in box.path.rglob("*.txt"))
        assert copied == sorted(files)
    finally:
        box.remove()


@pytest.mark.skipif(shutil.which("node") is None, reason="Node is not installed")
@pytest.mark.parametrize("mode", ["worktree", "copy"])
def test_a_workspace_member_resolves_to_the_sandbox_s_own_copy(
    tmp_path: Path, mode: SandboxMode
) -> None:
    # npm and pnpm link a workspace member into node_modules with a relative link
    # (node_modules/lib -> ../packages/lib); through a linked node_modules folder
    # it resolved into the checkout, so a member's build made in the sandbox was
    # not what the tests imported: they ran the checkout's (stale or absent) build.
    files = {
        ".gitignore": "node_modules/\ndist/\n",
        "package.json": '{"private": true, "workspaces": ["packages/*"]}\n',
        "packages/lib/package.json": '{"name": "lib", "main": "dist/index.js"}\n',
        "packages/app/package.json": '{"name": "app"}\n',
        "packages/app/node_modules/.keep": "",
    }
    path = make_repo(tmp_path / "ws", files)
    write(path, {"packages/lib/dist/index.js": "module.exports = 'checkout';\n"})
    write(path, {"node_modules/other/index.js": "module.exports = 'installed';\n"})
    (path / "node_modules/lib").symlink_to("../packages/lib", target_is_directory=True)
    (path / "packages/app/node_modules/@scope").mkdir()
    (path / "packages/app/node_modules/@scope/lib").symlink_to(
        "../../../lib", target_is_directory=True
    )
    repo = Repository(name="ws", path=path, relpath="ws")
    box = sandboxes.create(mode, repo, tmp_path / "boxes")
    write(box.path, {"packages/lib/dist/index.js": "module.exports = 'sandbox';\n"})
    script = "console.log(require('lib'), require('@scope/lib'), require('other'))"
    out = subprocess.run(
        ["node", "-e", script],
        cwd=box.path / "packages/app",
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.split() == ["sandbox", "sandbox", "installed"]
    assert "node_modules" not in git(box.path, "status", "--porcelain")
    box.remove()
    assert (path / "packages/lib/dist/index.js").read_text() == "module.exports = 'checkout';\n"
    assert (path / "node_modules/lib").is_symlink()

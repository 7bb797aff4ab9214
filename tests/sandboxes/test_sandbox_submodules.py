"""Repositories with git submodules in local sandboxes (docs/processes.md).

Real repositories, a real submodule added by file:// URL, with a nested
submodule inside it; the real CLI runs providers that read the submodule's
files and run git inside it. Each mode materializes an initialized
submodule's content by the rule it follows for the main tree (``worktree``:
tracked files with their working-tree content; ``copy``: plus
untracked-not-ignored), as a repository of its own, and the content identity
covers it: one changed byte inside the submodule re-runs exactly the providers
that could see it.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest
from prove_helpers import make_change, prove_json
from sandbox_helpers import git, make_repo, write

from changeloop import sandboxes
from changeloop.fingerprints.fingerprint import InputsIndex, inputs_digest
from changeloop.git.identity import content_identity
from changeloop.model import Repository, SandboxMode
from changeloop.sandboxes.place import sandbox_place

ALLOW = ("-c", "protocol.file.allow=always")


def _workspace(tmp_path: Path, execution: str, requires: str) -> Path:
    """``ws`` with submodule ``vendor/lib`` (itself holding submodule ``deep``)."""
    deep = make_repo(tmp_path / "up-deep", {"d.txt": "deep committed\n"})
    lib = make_repo(tmp_path / "up-lib", {"data.txt": "lib committed\n", ".gitignore": "*.log\n"})
    git(lib, *ALLOW, "submodule", "add", "-q", deep.as_uri(), "deep")
    git(lib, "commit", "-q", "-m", "add deep")
    ws = make_repo(tmp_path / "ws", {"src/app.py": "x = 1\n", "README.md": "r\n"})
    git(ws, *ALLOW, "submodule", "add", "-q", lib.as_uri(), "vendor/lib")
    git(ws, *ALLOW, "submodule", "update", "-q", "--init", "--recursive")
    make_change(ws, "c1", f"version: 3\nrequires: [{requires}]\n", execution)
    git(ws, "add", "-A")
    git(ws, "commit", "-q", "-m", "submodule and change")
    return ws


READER = """\
set -e
out="$1"
cat vendor/lib/data.txt > "$out/data"
cat vendor/lib/deep/d.txt > "$out/deep"
if [ -e vendor/lib/u.txt ]; then echo yes > "$out/untracked"; else echo no > "$out/untracked"; fi
if [ -e vendor/lib/x.log ]; then echo yes > "$out/ignored"; else echo no > "$out/ignored"; fi
git -C vendor/lib rev-parse --show-toplevel > "$out/toplevel"
git -C vendor/lib status --porcelain --untracked-files=no > "$out/status"
git -C vendor/lib/deep status --porcelain --untracked-files=no > "$out/deep-status"
git status --porcelain --untracked-files=no > "$out/super-status"
git submodule status --recursive > "$out/submodule-status"
echo ok > "$out/done"
"""


def _reader_workspace(tmp_path: Path) -> Path:
    script = tmp_path / "reader.sh"
    script.write_text(READER)
    execution = f"""
        version: 1
        providers:
          reader:
            adapter: command
            command: [sh, "{script}", "{tmp_path / "out"}"]
        """
    ws = _workspace(tmp_path, execution, "reader")
    (tmp_path / "out").mkdir()
    return ws


@pytest.mark.parametrize("mode", ["copy", "worktree"])
def test_provider_reads_the_submodule_as_the_user_has_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], mode: SandboxMode
) -> None:
    ws = _reader_workspace(tmp_path)
    lib = ws / "vendor/lib"
    # Uncommitted work inside the submodule and inside the nested one.
    write(lib, {"data.txt": "lib edited\n", "u.txt": "untracked\n", "x.log": "ignored\n"})
    write(lib / "deep", {"d.txt": "deep edited\n"})

    code, doc = prove_json(ws, "c1", "--sandbox", mode, "--no-cache", capsys=capsys)

    out = tmp_path / "out"
    assert (out / "done").is_file(), doc
    assert code == 0, doc
    # Tracked files carry their working-tree content in both modes.
    assert (out / "data").read_text() == "lib edited\n"
    assert (out / "deep").read_text() == "deep edited\n"
    # Untracked-not-ignored only in copy, ignored never: the main tree's rule.
    assert (out / "untracked").read_text() == ("yes\n" if mode == "copy" else "no\n")
    assert (out / "ignored").read_text() == "no\n"
    # The submodule is a repository of its own in the sandbox, clean as made.
    toplevel = Path((out / "toplevel").read_text().strip())
    assert toplevel.is_relative_to(sandbox_place(ws).path)
    assert toplevel.name == "lib"
    assert (out / "status").read_text() == ""
    assert (out / "deep-status").read_text() == ""
    # The superproject's gitlinks name exactly the submodules' HEADs: nothing modified.
    assert (out / "super-status").read_text() == ""
    # Checked out and active, as the user's are (not "-", uninitialized).
    listed = (out / "submodule-status").read_text().splitlines()
    assert [line[0] + line.split()[1] for line in listed] == [" vendor/lib", " vendor/lib/deep"]


VANDAL = """\
set -e
git -C vendor/lib reset -q --hard
git -C vendor/lib/deep reset -q --hard
echo provider > vendor/lib/data.txt
git -C vendor/lib -c user.name=p -c user.email=p@p commit -q -am "provider commit"
git -C vendor/lib checkout -q -b provider-branch
git -C vendor/lib tag provider-tag
git -C vendor/lib config foo.bar baz
echo provider > vendor/lib/deep/d.txt
git -C vendor/lib/deep -c user.name=p -c user.email=p@p commit -q -am "provider commit"
git submodule foreach -q --recursive "git reset -q --hard HEAD~1" || true
rm -rf vendor/lib/deep
echo ok > "$1/done"
"""


def _snapshot(ws: Path) -> dict[str, bytes]:
    """Every file of the user's checkout and git directories, objects aside, byte for byte.

    Objects are left out: computing the identity writes trees (and a dirty
    submodule's content commit) into the user's object stores, which moves
    nothing the user sees.
    """
    out: dict[str, bytes] = {}
    for dirpath, dirnames, files in os.walk(ws):
        rel_dir = Path(dirpath).relative_to(ws)
        dirnames[:] = [d for d in dirnames if d not in ("objects", ".changeloop")]
        for name in files:
            out[(rel_dir / name).as_posix()] = (Path(dirpath) / name).read_bytes()
    for repo in (ws, ws / "vendor/lib", ws / "vendor/lib/deep"):
        out[f"state:{repo}"] = "\n".join(
            [
                git(repo, "rev-parse", "HEAD"),
                git(repo, "for-each-ref", "--format=%(refname) %(objectname)"),
                git(repo, "status", "--porcelain", "--untracked-files=all"),
                git(repo, "diff", "--cached"),
                git(repo, "diff"),
            ]
        ).encode()
    return out


@pytest.mark.parametrize("mode", ["copy", "worktree"])
def test_git_in_a_provider_never_reaches_the_user_submodule(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], mode: SandboxMode
) -> None:
    script = tmp_path / "vandal.sh"
    script.write_text(VANDAL)
    (tmp_path / "out").mkdir()
    execution = f"""
        version: 1
        providers:
          vandal:
            adapter: command
            command: [sh, "{script}", "{tmp_path / "out"}"]
        """
    ws = _workspace(tmp_path, execution, "vandal")
    write(ws / "vendor/lib", {"data.txt": "lib edited\n", "u.txt": "untracked\n"})
    git(ws / "vendor/lib", "add", "u.txt")  # staged in the submodule's own index
    write(ws / "vendor/lib/deep", {"d.txt": "deep edited\n"})
    before = _snapshot(ws)

    code, doc = prove_json(ws, "c1", "--sandbox", mode, "--no-cache", capsys=capsys)

    assert (tmp_path / "out" / "done").read_text() == "ok\n", doc
    assert code == 0, doc
    after = _snapshot(ws)
    changed = {k: (before.get(k), v) for k, v in after.items() if before.get(k) != v}
    assert changed == {}, "\n".join(f"{k}: {b!r} -> {a!r}" for k, (b, a) in changed.items())
    assert after == before


def _states(doc: dict[str, Any]) -> dict[str, str]:
    return {p["name"]: p["state"] for p in doc["providers"]}


@pytest.mark.parametrize("mode", ["none", "worktree", "copy"])
def test_a_changed_byte_inside_a_submodule_reruns_exactly_who_could_see_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], mode: SandboxMode
) -> None:
    py = sys.executable
    execution = f"""
        version: 1
        providers:
          whole:
            adapter: command
            command: [{py}, -c, "pass"]
          sub:
            adapter: command
            command: [{py}, -c, "pass"]
            inputs: ["vendor/lib/**"]
          deep:
            adapter: command
            command: [{py}, -c, "pass"]
            inputs: ["vendor/lib/deep"]
          other:
            adapter: command
            command: [{py}, -c, "pass"]
            inputs: ["src/**"]
        """
    ws = _workspace(tmp_path, execution, "whole, sub, deep, other")
    every = {"whole", "sub", "deep", "other"}

    def run() -> dict[str, str]:
        code, doc = prove_json(ws, "c1", "--sandbox", mode, capsys=capsys)
        assert code == 0, doc
        return _states(doc)

    assert run() == dict.fromkeys(every, "ran")
    assert run() == dict.fromkeys(every, "cached")

    (ws / "vendor/lib/data.txt").write_text("lib committed!\n")  # one byte, uncommitted
    assert run() == {"whole": "ran", "sub": "ran", "deep": "cached", "other": "cached"}
    assert run() == dict.fromkeys(every, "cached")

    (ws / "vendor/lib/deep/d.txt").write_text("deep committed!\n")  # inside the nested one
    assert run() == {"whole": "ran", "sub": "ran", "deep": "ran", "other": "cached"}

    # Back as committed: the first run's identity again, so its receipts speak again.
    (ws / "vendor/lib/deep/d.txt").write_text("deep committed\n")
    (ws / "vendor/lib/data.txt").write_text("lib committed\n")
    assert run() == dict.fromkeys(every, "cached")


def test_clean_submodules_keep_the_plain_git_identity(tmp_path: Path) -> None:
    """A submodule as committed is its commit id, exactly what plain git writes."""
    ws = _reader_workspace(tmp_path)
    plain = git(ws, "rev-parse", "HEAD^{tree}")
    ident = content_identity(ws, include_untracked=False)
    assert not ident.dirty
    assert git(ws, "rev-parse", f"{ident.tree}:vendor/lib") == git(
        ws, "rev-parse", f"{plain}:vendor/lib"
    )
    # A dirty byte inside gives a different, reproducible commit whose tree is the content.
    write(ws / "vendor/lib", {"data.txt": "lib edited\n"})
    first = content_identity(ws, include_untracked=False)
    second = content_identity(ws, include_untracked=False)
    assert first.tree == second.tree != ident.tree
    assert first.dirty
    link = git(ws, "rev-parse", f"{first.tree}:vendor/lib")
    lib = ws / "vendor/lib"
    assert git(lib, "rev-parse", f"{link}^") == git(lib, "rev-parse", "HEAD")
    assert git(lib, "show", f"{link}:data.txt") == "lib edited"
    # Every mode names the same content the same way.
    repo = Repository(name="ws", path=ws, relpath=".")
    box = sandboxes.create("worktree", repo, tmp_path / "boxes")
    try:
        assert box.identity.tree == first.tree
        assert git(box.path / "vendor/lib", "rev-parse", "HEAD") == link
    finally:
        box.remove()


@pytest.mark.parametrize("mode", ["copy", "worktree"])
def test_an_uninitialized_submodule_stays_an_empty_folder(
    tmp_path: Path, mode: SandboxMode
) -> None:
    ws = _reader_workspace(tmp_path)
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(ws), str(clone))  # no --recurse-submodules
    assert list((clone / "vendor/lib").iterdir()) == []
    repo = Repository(name="clone", path=clone, relpath=".")
    box = sandboxes.create(mode, repo, tmp_path / "boxes")
    try:
        assert (box.path / "vendor/lib").is_dir()
        assert list((box.path / "vendor/lib").iterdir()) == []
        # As git leaves it: the gitlink is the committed one, the identity is plain git's.
        assert git(clone, "rev-parse", f"{box.identity.tree}:vendor/lib") == git(
            clone, "rev-parse", "HEAD:vendor/lib"
        )
        assert git(box.path, "status", "--porcelain", "--untracked-files=no") == ""
        assert box.notes == (
            "submodule vendor/lib is not initialized: the sandbox holds an empty folder (run `git submodule update --init --recursive` to prove with its files)",
        )
    finally:
        box.remove()


def test_each_mode_identifies_the_submodule_as_it_holds_it(tmp_path: Path) -> None:
    """copy's identity (made from the copy) equals the in-place one with untracked files;
    worktree's equals the in-place one without; a subdirectory repository too."""
    ws = _reader_workspace(tmp_path)
    write(ws / "vendor/lib", {"data.txt": "lib edited\n", "u.txt": "untracked\n"})
    write(ws / "vendor/lib/deep", {"d.txt": "deep edited\n", "n.txt": "untracked\n"})
    write(ws, {"svc/main.py": "x = 1\n"})
    git(ws, "add", "svc/main.py")
    git(ws, *ALLOW, "submodule", "add", "-q", (tmp_path / "up-lib").as_uri(), "svc/lib")
    git(ws, *ALLOW, "submodule", "update", "-q", "--init", "--recursive")
    write(ws / "svc/lib", {"data.txt": "svc lib edited\n"})
    for repo in (
        Repository(name="ws", path=ws, relpath="."),
        Repository(name="svc", path=ws / "svc", relpath="svc"),
    ):
        modes: tuple[tuple[SandboxMode, bool], ...] = (("copy", True), ("worktree", False))
        for mode, untracked in modes:
            expected = content_identity(repo.path, include_untracked=untracked)
            box = sandboxes.create(mode, repo, tmp_path / "boxes")
            try:
                assert box.identity == expected, (repo.name, mode)
                lib = box.path / ("lib" if repo.name == "svc" else "vendor/lib")
                edited = "svc lib edited\n" if repo.name == "svc" else "lib edited\n"
                assert (lib / "data.txt").read_text() == edited
                if repo.name == "ws":
                    assert (lib / "deep/d.txt").read_text() == "deep edited\n"
                    assert (lib / "deep/n.txt").exists() == untracked
                else:  # svc/lib's own checkout of deep, as committed
                    assert (lib / "deep/d.txt").read_text() == "deep committed\n"
                assert git(lib, "rev-parse", "--show-toplevel") == str(lib)
                assert git(box.path, "status", "--porcelain", "--untracked-files=no") == ""
            finally:
                box.remove()


def test_the_one_shot_inputs_digest_sees_inside_the_submodule(tmp_path: Path) -> None:
    """``inputs_digest`` (no identity tree at hand) lists the working tree: same rule."""
    ws = _reader_workspace(tmp_path)
    before = {g: inputs_digest(ws, [g]) for g in ("vendor/lib/**", "src/**")}
    write(ws / "vendor/lib", {"data.txt": "lib committed!\n"})
    after = {g: inputs_digest(ws, [g]) for g in ("vendor/lib/**", "src/**")}
    assert after["vendor/lib/**"] != before["vendor/lib/**"]
    assert after["src/**"] == before["src/**"]
    # The digest made from the identity's tree agrees with it.
    tree = content_identity(ws, include_untracked=True).tree
    assert InputsIndex(ws, tree=tree).digest(["vendor/lib/**"]) == after["vendor/lib/**"]

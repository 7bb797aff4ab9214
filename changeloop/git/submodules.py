"""Submodules: their own content in the content identity, the inputs listing and sandboxes.

A submodule is a *gitlink* in its superproject's tree: a commit id, which
``git add`` takes from the submodule's HEAD. Uncommitted work inside the
submodule would therefore be invisible to the identity, and a cached pass
could speak for content nobody proved. Here each initialized submodule's
content is identified by the rule of the mode (tracked files with their
working-tree content; plus untracked-not-ignored files where the main tree
includes them), recursively, and its gitlink names:

- the submodule's HEAD when that content *is* HEAD's tree — so a clean
  submodule keeps exactly the identity plain git writes (and CI computes);
- otherwise the submodule's *content commit*: that tree, parent HEAD, a fixed
  author and committer dated with HEAD's commit date (``git.commit.content_commit``),
  written into the submodule's own object store (no ref moves). Same content,
  same id, in every mode and on every machine.

Repositories without a ``.gitmodules`` file pay one ``stat``. A gitlink
without one (an embedded repository committed by hand) stays the commit git
recorded. An uninitialized submodule (no ``.git`` in its folder) stays the
gitlink git recorded and an empty folder, as git leaves it (:func:`uninitialized`).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from changeloop.git.commit import content_commit as reproducible_commit
from changeloop.git.index import seed_index, stage
from changeloop.git.repo import GitLayout, git, git_env, layout

__all__ = ["Submodule", "expand", "fold", "gitlinks", "initialized", "uninitialized"]

GITLINK = "160000"


@dataclass(frozen=True)
class Submodule:
    """One initialized submodule as identified: where it is and what its gitlink names."""

    path: str  # relative to the superproject directory it was found in
    source: Path  # the user's checkout of it
    layout: GitLayout
    tree: str  # its content tree (its own gitlinks folded), in its object store
    commit: str  # what the superproject's gitlink names (HEAD, or the content commit)
    children: tuple[Submodule, ...]


def may_have(directory: Path) -> bool:
    """The one cheap check: is there a ``.gitmodules`` at ``directory``'s work-tree top?"""
    probe = directory
    while True:
        if (probe / ".gitmodules").is_file():
            return True
        if (probe / ".git").exists() or probe.parent == probe:
            return False
        probe = probe.parent


def initialized(path: Path) -> bool:
    """A checked-out submodule: a repository of its own whose top level is ``path``."""
    return (path / ".git").exists()


def gitlinks(cwd: Path, env: Mapping[str, str] | None = None) -> list[tuple[str, str]]:
    """``(path, commit)`` of the gitlinks in the index ``env`` names, under ``cwd``."""
    if not may_have(cwd):
        return []
    listed = git(["ls-files", "-s", "-z", "--", "."], cwd=cwd, env=env).stdout
    out: list[tuple[str, str]] = []
    for record in listed.split(b"\0"):
        meta, _tab, path = record.partition(b"\t")
        if meta.startswith(GITLINK.encode() + b" "):
            out.append((os.fsdecode(path), meta.split(b" ")[1].decode()))
    return out


def uninitialized(directory: Path) -> list[str]:
    """The submodules under ``directory`` that are not checked out (empty folders in a sandbox)."""
    return [path for path, _commit in gitlinks(directory) if not initialized(directory / path)]


def note(path: str) -> str:
    """What a user is told about an uninitialized submodule."""
    return (
        f"submodule {path} is not initialized: the sandbox holds an empty folder "
        "(run `git submodule update --init --recursive` to prove with its files)"
    )


def fold(
    cwd: Path,
    env: Mapping[str, str],
    *,
    include_untracked: bool,
    missing: list[str] | None = None,
    prefix: str = "",
) -> list[Submodule]:
    """Point the gitlinks of the index ``env`` names at their submodules' content.

    ``cwd`` is the user's directory the index describes (its submodules are
    read there). Returns the initialized submodules, each identified
    recursively; the caller writes the tree afterwards. Uninitialized ones
    (at any depth, as ``prefix``-ed paths) are appended to ``missing``.
    """
    found: list[Submodule] = []
    updates: list[tuple[str, str]] = []
    for path, recorded in gitlinks(cwd, env):
        source = cwd / path
        if not initialized(source):
            if missing is not None:
                missing.append(prefix + path)
            continue
        sub = identify(
            source,
            path,
            include_untracked=include_untracked,
            missing=missing,
            prefix=f"{prefix}{path}/",
        )
        if sub is None:
            continue
        found.append(sub)
        if sub.commit != recorded:
            updates.append((sub.commit, path))
    if updates:
        # --cacheinfo names a path from the work tree's top, not from cwd.
        top = git(["rev-parse", "--show-prefix"], cwd=cwd, env=env).stdout.decode().strip()
        for commit, path in updates:
            info = f"{GITLINK},{commit},{top}{path}"
            git(["update-index", "--cacheinfo", info], cwd=cwd, env=env)
    return found


def identify(
    source: Path,
    path: str,
    *,
    include_untracked: bool,
    missing: list[str] | None = None,
    prefix: str = "",
) -> Submodule | None:
    """One checked-out submodule's content tree and commit (its own submodules first)."""
    lay = layout(source)
    if lay.toplevel.resolve() != source.resolve():
        return None  # not a repository of its own (a broken checkout): git's gitlink stands
    with tempfile.TemporaryDirectory(prefix="changeloop-index-") as tmp:
        env = git_env(Path(tmp) / "index")
        seed_index(lay, Path(tmp) / "index", source)
        stage(source, env, include_untracked=include_untracked)
        children = fold(
            source, env, include_untracked=include_untracked, missing=missing, prefix=prefix
        )
        tree = git(["write-tree"], cwd=source, env=env).stdout.decode().strip()
    commit = content_commit(source, tree, lay)
    return Submodule(path, source, lay, tree, commit, tuple(children))


def content_commit(cwd: Path, tree: str, lay: GitLayout) -> str:
    """HEAD when ``tree`` is HEAD's, else the reproducible content commit (in ``lay``'s store)."""
    env = git_env(extra={"GIT_DIR": str(lay.git_dir)})
    if lay.head is not None:
        head_tree = git(["rev-parse", f"{lay.head}^{{tree}}"], cwd=cwd, env=env).stdout
        if head_tree.decode().strip() == tree:
            return lay.head
    return reproducible_commit(cwd, tree, lay, env=env)


def expand(workdir: Path, links: list[tuple[str, str]]) -> dict[str, tuple[str, str]]:
    """The files inside the gitlinks ``links`` (``path``, commit) of ``workdir``'s content.

    For the inputs listing: ``path/file`` -> (mode, blob id), read from each
    initialized submodule's own object store (where the content commit was
    written), recursively. An uninitialized submodule, or a commit the
    submodule does not hold, contributes nothing (its gitlink still counts).
    """
    out: dict[str, tuple[str, str]] = {}
    for path, commit in links:
        source = workdir / path
        if not initialized(source):
            continue
        proc = git(["ls-tree", "-r", "-z", commit], cwd=source, check=False)
        if proc.returncode != 0:
            continue
        nested: list[tuple[str, str]] = []
        for record in proc.stdout.split(b"\0"):
            if not record:
                continue
            meta, _tab, raw = record.partition(b"\t")
            mode, _kind, oid = meta.decode().split(" ")
            rel = os.fsdecode(raw)
            out[f"{path}/{rel}"] = (mode, oid)
            if mode == GITLINK:
                nested.append((rel, oid))
        for rel, entry in expand(source, nested).items():
            out[f"{path}/{rel}"] = entry
    return out

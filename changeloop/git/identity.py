"""Content identity: the git tree of what was proven, ``openspec/`` left out.

docs/receipts.md: the subject of every receipt is a real git tree object that
anyone can reproduce with plain git. It is written through a *temporary* index
(``GIT_INDEX_FILE``), so no ref, branch or index of the user ever moves, and
the top-level ``openspec/`` of the repository is removed from it, so that
committing a change's docs or receipts never invalidates the receipts.

Usage::

    ident = content_identity(Path("web"), include_untracked=True)
    ident.tree   # "3b18e512dba79e4c8300dd08aeb37f8e728b8dad"

All per-file work happens inside git (one short chain of git processes); the
temporary index is seeded from a copy of the user's index so that unchanged
files are not re-hashed (git's stat cache).

:mod:`~changeloop.git.repo` runs git and locates a repository.
"""

from __future__ import annotations

import dataclasses
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from changeloop.errors import ChangeloopError
from changeloop.git.index import seed_index, stage
from changeloop.git.repo import GitLayout, git, git_env, layout

if TYPE_CHECKING:  # the model's dataclasses are not imported for a tree id alone
    from changeloop.model import ContentIdentity

__all__ = [
    "OPENSPEC",
    "content_identity",
    "content_tree",
    "identity_from_tree",
    "identity_of_tree",
    "identity_refusal",
]

OPENSPEC = "openspec"


def identity_from_tree(
    cwd: Path,
    env: Mapping[str, str],
    full_tree: str,
    *,
    prefix: str,
    head_prefix: str,
    head: str | None,
) -> ContentIdentity:
    """The identity inside ``full_tree``: its ``prefix`` subtree with ``openspec`` left out.

    The same tree ``git rm -r --cached openspec; git write-tree --prefix`` gives,
    made from tree objects alone so that the index that wrote ``full_tree`` is
    left as it was (a sandbox keeps it as its own index). ``head_prefix`` is
    where the repository sits in HEAD (a copy sandbox holds only the subtree).
    """
    from changeloop.model import ContentIdentity  # noqa: PLC0415 - kept off the no-change answer's imports

    sub, kept = _without_openspec(cwd, env, full_tree, prefix)
    dirty = _differs_from_head(cwd, env, tree=sub, ours=kept, prefix=head_prefix, head=head)
    return ContentIdentity(tree=sub, head=head, dirty=dirty)


def _without_openspec(
    cwd: Path, env: Mapping[str, str], full_tree: str, prefix: str
) -> tuple[str, list[bytes]]:
    """``full_tree``'s ``prefix`` subtree with a top-level ``openspec`` left out, and its
    top-level entries."""
    sub = full_tree
    if prefix:
        found = git(
            ["rev-parse", "-q", "--verify", f"{full_tree}:{prefix}"], cwd=cwd, env=env, check=False
        )
        sub = found.stdout.decode().strip()
    entries = _entries(cwd, env, sub) if sub else []
    kept = [e for e in entries if e.split(b"\t", 1)[1] != OPENSPEC.encode()]
    if not sub or len(kept) != len(entries):
        # --missing: the entries' objects exist already (or are submodule commits).
        listing = b"".join(e + b"\0" for e in kept)
        mktree = git(["mktree", "-z", "--missing"], cwd=cwd, env=env, input_bytes=listing)
        sub = mktree.stdout.decode().strip()
    return sub, kept


def _entries(cwd: Path, env: Mapping[str, str], tree: str) -> list[bytes]:
    """``tree``'s top-level entries as ``git ls-tree -z`` prints them."""
    listed = git(["ls-tree", "--full-tree", "-z", tree], cwd=cwd, env=env).stdout
    return [e for e in listed.split(b"\0") if e]


def _differs_from_head(
    cwd: Path,
    env: Mapping[str, str],
    *,
    tree: str,
    ours: list[bytes],
    prefix: str,
    head: str | None,
) -> bool:
    """Compare ``tree``'s top-level entries ``ours`` with HEAD's (minus openspec), for the prefix.

    Comparing one tree listing is enough: equal entry ids mean equal subtrees.
    """
    if head is None:
        return True
    head_tree = (
        git(["rev-parse", "-q", "--verify", f"{head}:{prefix}"], cwd=cwd, env=env, check=False)
        .stdout.decode()
        .strip()
    )
    if not head_tree:  # HEAD has nothing here: dirty unless we have nothing either
        return bool(ours)
    if head_tree == tree:
        return False
    theirs = [e for e in _entries(cwd, env, head_tree) if not e.endswith(b"\t" + OPENSPEC.encode())]
    return sorted(ours) != sorted(theirs)


def content_identity(repo: Path, *, include_untracked: bool) -> ContentIdentity:
    """The git tree of ``repo``'s working-tree content, top-level ``openspec/`` left out.

    ``include_untracked``: also untracked files that are not ignored (copy and
    none modes); without it, tracked files only (worktree mode). ``repo`` may
    be a subdirectory of a bigger work tree: the tree is of that subdirectory.
    """
    repo = repo.resolve()
    lay = layout(repo)
    with tempfile.TemporaryDirectory(prefix="changeloop-index-") as tmp:
        tmp_index = Path(tmp) / "index"
        try:
            env = git_env(tmp_index)
            full_tree = _staged_tree(repo, lay, env, tmp_index, include_untracked)
            return identity_from_tree(
                repo, env, full_tree, prefix=lay.prefix, head_prefix=lay.prefix, head=lay.head
            )
        except ChangeloopError as exc:
            raise identity_refusal(exc, repo) from exc


def _staged_tree(
    repo: Path, lay: GitLayout, env: Mapping[str, str], tmp_index: Path, include_untracked: bool
) -> str:
    """The work tree staged into ``tmp_index`` (submodules folded in) and written as a tree.

    One function for both :func:`content_identity` and :func:`content_tree`: the
    no-change decision and the full path must see the same content, submodules
    included (docs/fingerprints.md).
    """
    from changeloop.git import submodules  # noqa: PLC0415 - kept off the no-change answer's imports

    seed_index(lay, tmp_index, repo)
    stage(repo, env, include_untracked=include_untracked)
    submodules.fold(repo, env, include_untracked=include_untracked)
    return git(["write-tree"], cwd=repo, env=env).stdout.decode().strip()


def identity_of_tree(repo: Path, tree: str) -> ContentIdentity:
    """The identity whose tree :func:`content_tree` just gave: HEAD and dirtiness added
    (three git processes instead of staging the whole work tree again)."""
    repo = repo.resolve()
    lay = layout(repo)
    env = git_env()
    try:
        kept = _entries(repo, env, tree)
        dirty = _differs_from_head(
            repo, env, tree=tree, ours=kept, prefix=lay.prefix, head=lay.head
        )
    except ChangeloopError as exc:
        raise identity_refusal(exc, repo) from exc
    from changeloop.model import ContentIdentity  # noqa: PLC0415 - kept off the no-change answer's imports

    return ContentIdentity(tree=tree, head=lay.head, dirty=dirty)


def content_tree(repo: Path, *, include_untracked: bool) -> str:
    """The tree id :func:`content_identity` gives, without HEAD and dirtiness (2–3 fewer
    git processes): what the no-change decision compares (changeloop.nochange). The tree
    is written, so a caller handing it on (to :func:`identity_of_tree`) can read it."""
    repo = repo.resolve()
    lay = layout(repo, head=False)
    if not lay.index.is_file():  # seeded from HEAD: the full path knows how
        return content_identity(repo, include_untracked=include_untracked).tree
    with tempfile.TemporaryDirectory(prefix="changeloop-index-") as tmp:
        tmp_index = Path(tmp) / "index"
        try:
            env = git_env(tmp_index)
            full_tree = _staged_tree(repo, lay, env, tmp_index, include_untracked)
            return _without_openspec(repo, env, full_tree, lay.prefix)[0]
        except ChangeloopError as exc:
            raise identity_refusal(exc, repo) from exc


def identity_refusal(exc: ChangeloopError, repo: Path) -> ChangeloopError:
    """A git failure while identifying content refuses the run (exit 2, docs/design.md),
    with git's own words as the cause rather than a guess."""
    problems = [
        dataclasses.replace(
            p,
            fix=f"fix what git reports in {repo} (its message is the cause), then prove again",
        )
        if p.code == "git_failed"
        else p
        for p in exc.problems
    ]
    return ChangeloopError(problems, exit_code=2)

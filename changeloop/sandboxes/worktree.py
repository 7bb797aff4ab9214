"""``--sandbox worktree``: a repository of its own holding a snapshot of tracked files.

The snapshot holds tracked files with their *working-tree* content (not just
HEAD; the ``git stash create`` idea): a temporary index seeded from the user's
is brought up to date (``git add -u``) and written as a tree, in the user's
object store. That tree is checked out into the sandbox's own repository
(``own_repo``: objects borrowed through alternates, no ``git worktree``, which
would share the user's refs and config) with ``git read-tree -u`` and
``checkout.workers`` = CPU count; the sandbox's HEAD is a commit of it whose
parent is the user's HEAD. No ref, branch or index of the user moves;
untracked files are absent. The identity is the same tree minus ``openspec/``,
so it names exactly what was checked out; the checkout keeps ``openspec/``
(providers may read it).

Each initialized submodule is identified the same way (``changeloop.git.submodules``:
its gitlink names its content) and checked out into its folder as a
repository of its own; an uninitialized one stays an empty folder.

For a repository inside a bigger work tree only that subdirectory is brought
up to date; the rest of the checkout is the user's index, and the sandbox path
is ``<sandbox>/<prefix>``.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from changeloop.git import submodules
from changeloop.git.commit import own_env, with_config
from changeloop.git.identity import identity_from_tree
from changeloop.git.index import seed_index, stage
from changeloop.git.repo import git, git_env, layout
from changeloop.model import ContentIdentity, Repository, SandboxMode
from changeloop.sandboxes import own_repo
from changeloop.sandboxes.base import Sandbox, new_dir, remove_sandbox


class Worktree(Sandbox):
    def __init__(
        self, root: Path, path: Path, identity: ContentIdentity, notes: tuple[str, ...] = ()
    ) -> None:
        self.mode: SandboxMode = "worktree"
        self.root = root  # the sandbox repository's top level
        self.path = path
        self.identity = identity
        self.notes = notes

    def remove(self) -> None:
        remove_sandbox(self.root)


def create(repo: Repository, base_dir: Path) -> Sandbox:
    source = repo.path.resolve()
    lay = layout(source)
    with tempfile.TemporaryDirectory(prefix="changeloop-index-") as tmp:
        env = git_env(Path(tmp) / "index")
        seed_index(lay, Path(tmp) / "index", source)
        stage(source, env, include_untracked=False)
        missing: list[str] = []
        subs = submodules.fold(source, env, include_untracked=False, missing=missing)
        full_tree = git(["write-tree"], cwd=source, env=env).stdout.decode().strip()
        identity = identity_from_tree(
            source, env, full_tree, prefix=lay.prefix, head_prefix=lay.prefix, head=lay.head
        )
    root = new_dir(base_dir, repo.name, lay.toplevel.name)
    try:
        own_repo.init(root, lay)
        git(["read-tree", "-u", "--reset", full_tree], cwd=root, env=_checkout_env(root))
        _materialize(root, lay.prefix, subs)
        own_repo.finish(root, lay.toplevel, full_tree, lay)
    except BaseException:
        remove_sandbox(root)
        raise
    path = root / lay.prefix if lay.prefix else root
    path.mkdir(parents=True, exist_ok=True)  # a subdirectory with no tracked files yet
    return Worktree(root, path, identity, tuple(submodules.note(p) for p in missing))


def _checkout_env(root: Path) -> dict[str, str]:
    """git checking out into the sandbox at ``root``: parallel, never into submodules itself."""
    settings = {"checkout.workers": str(os.cpu_count() or 1), "submodule.recurse": "false"}
    return with_config(own_env(root), settings)


def _materialize(root: Path, prefix: str, subs: list[submodules.Submodule]) -> None:
    """Each submodule's content as a repository of its own, HEAD at what its gitlink names.

    ``read-tree`` left each gitlink an empty folder under ``root/prefix``; the
    submodule's tree (in the user's submodule object store, borrowed through
    alternates) is checked out there, its own submodules inside it, before its
    HEAD is set; ``root``'s repository then counts them active.
    """
    for sub in subs:
        dest = root / prefix / sub.path
        own_repo.init(dest, sub.layout)
        git(["read-tree", "-u", "--reset", sub.tree], cwd=dest, env=_checkout_env(dest))
        _materialize(dest, "", list(sub.children))
        own_repo.finish(dest, sub.source, sub.tree, sub.layout, commit=sub.commit)
    own_repo.activate(root, [prefix + sub.path for sub in subs])

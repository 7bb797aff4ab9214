"""``--sandbox worktree``: a detached git worktree of a snapshot of tracked files.

The snapshot holds tracked files with their *working-tree* content (not just
HEAD): a temporary index is brought up to date (``git add -u``), written as a
tree and wrapped in an unreferenced commit (``git commit-tree``), then checked
out with ``git worktree add --detach`` using ``checkout.workers`` = CPU count.
No ref, branch or index of the user moves; untracked files are absent. The same
index, minus ``openspec/``, gives the identity, so it names exactly what was
checked out. The checkout keeps ``openspec/`` (providers may read it).

For a repository inside a bigger work tree only that subdirectory is brought
up to date; the rest of the checkout is the user's index, and the sandbox path
is ``<worktree>/<prefix>``.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from changeloop.identity import (
    git,
    git_env,
    identity_from_index,
    layout,
    seed_index,
    stage,
)
from changeloop.model import ContentIdentity, Repository, SandboxMode
from changeloop.sandboxes.base import Sandbox, new_dir, remove_tree

# A fixed author keeps the snapshot independent of the user's git config.
_IDENT = {
    "GIT_AUTHOR_NAME": "changeloop",
    "GIT_AUTHOR_EMAIL": "changeloop@localhost",
    "GIT_COMMITTER_NAME": "changeloop",
    "GIT_COMMITTER_EMAIL": "changeloop@localhost",
}


class Worktree(Sandbox):
    def __init__(self, root: Path, path: Path, identity: ContentIdentity, source: Path) -> None:
        self.mode: SandboxMode = "worktree"
        self.root = root  # the worktree's top level
        self.path = path
        self.identity = identity
        self._source = source

    def remove(self) -> None:
        """Delete the checkout, then let git forget it (``worktree prune``)."""
        remove_tree(self.root)
        git(["worktree", "prune"], cwd=self._source, check=False)


def create(repo: Repository, base_dir: Path) -> Sandbox:
    source = repo.path.resolve()
    lay = layout(source)
    root = new_dir(base_dir, repo.name)
    with tempfile.TemporaryDirectory(prefix="changeloop-index-") as tmp:
        env = git_env(Path(tmp) / "index", _IDENT)
        seed_index(lay, Path(tmp) / "index", source)
        stage(source, env, include_untracked=False)
        full_tree = git(["write-tree"], cwd=source, env=env).stdout.decode().strip()
        parents = ["-p", lay.head] if lay.head else []
        commit = (
            git(
                ["commit-tree", full_tree, *parents, "-m", "changeloop sandbox snapshot"],
                cwd=source,
                env=env,
            )
            .stdout.decode()
            .strip()
        )
        try:
            git(
                [
                    "-c",
                    f"checkout.workers={os.cpu_count() or 1}",
                    "-c",
                    "core.hooksPath=/dev/null",  # the user's hooks are not ours to run
                    "worktree",
                    "add",
                    "--detach",
                    "--quiet",
                    str(root),
                    commit,
                ],
                cwd=source,
                env=git_env(extra=_IDENT),
            )
            identity = identity_from_index(
                source, env, write_prefix=lay.prefix, head_prefix=lay.prefix, head=lay.head
            )
        except BaseException:
            remove_tree(root)
            git(["worktree", "prune"], cwd=source, check=False)
            raise
    path = root / lay.prefix if lay.prefix else root
    path.mkdir(parents=True, exist_ok=True)  # a subdirectory with no tracked files yet
    return Worktree(root, path, identity, source)

"""Sandboxes: where each repository's providers run (docs/processes.md).

Usage::

    box = sandboxes.create("worktree", repository, state.sandboxes)
    ... run providers in box.path; subjects use box.identity ...
    box.remove()

One module per mode, one interface (:class:`Sandbox`); ``MODES`` is a literal
dict, like the adapter registry. :func:`cleanup_stale` removes what a crashed
run left behind; call it at the start of every run.
"""

from __future__ import annotations

from pathlib import Path

from changeloop.git.repo import git
from changeloop.model import Repository, SandboxMode
from changeloop.sandboxes import copy, dependencies, none, worktree
from changeloop.sandboxes.base import Maker, Sandbox, owner_alive, remove_tree

__all__ = ["DEFAULT_MODE", "MODES", "Sandbox", "cleanup_stale", "create"]

MODES: dict[SandboxMode, Maker] = {
    "worktree": worktree.create,
    "copy": copy.create,
    "none": none.create,
}
# docs/sandboxes.md explains the choice.
DEFAULT_MODE: SandboxMode = "none"  # why: docs/sandboxes.md


def create(mode: SandboxMode, repo: Repository, base_dir: Path) -> Sandbox:
    """Make ``repo``'s sandbox under ``base_dir`` (``place.sandbox_place``).

    A sandbox outside the checkout of a repository without ``setup`` gets the
    checkout's ignored ``node_modules`` folders linked in (``dependencies``):
    Node's module resolution found them by walking up from a sandbox inside it.
    """
    box = MODES[mode](repo, base_dir)
    if (
        mode != "none"
        and not repo.setup
        and not base_dir.resolve().is_relative_to(repo.path.resolve())
    ):
        try:
            dependencies.link_node_modules(repo.path, box.path)
        except BaseException:
            box.remove()
            raise
    return box


def cleanup_stale(base_dir: Path) -> list[Path]:
    """Remove sandboxes whose owning process is gone; return what was removed.

    ``base_dir`` is the directory sandboxes are made in (``.changeloop/sandboxes``).
    A linked worktree left by an older changeloop (sandboxes were linked
    worktrees then) is also pruned from its source repository.
    """
    removed: list[Path] = []
    if not base_dir.is_dir():
        return removed
    for entry in sorted(base_dir.iterdir()):
        if not entry.is_dir() or entry.is_symlink() or owner_alive(entry) is not False:
            continue
        common = _worktree_common_dir(entry)
        remove_tree(entry)
        if common is not None and common.is_dir():
            git(["--git-dir", str(common), "worktree", "prune"], cwd=base_dir, check=False)
        removed.append(entry)
    return removed


def _worktree_common_dir(root: Path) -> Path | None:
    """For a linked worktree, the source's git directory (from its ``.git`` file)."""
    try:
        text = (root / ".git").read_text(encoding="utf-8")
    except OSError:
        return None
    if not text.startswith("gitdir:"):
        return None
    admin = Path(text.split(":", 1)[1].strip())  # <common>/worktrees/<name>
    return admin.parent.parent

"""Where a workspace's sandboxes are made: outside every git work tree, on the checkout's disk.

A sandbox inside the user's work tree (``.changeloop/sandboxes/``) is one
``.git`` away from the user's repository: a provider that deletes or damages
the sandbox's ``.git``, or runs git from ``..``, lets git's discovery climb to
the user's repository. So sandboxes live under the user's cache directory,
``$XDG_CACHE_HOME/changeloop/sandboxes/<checkout>-<hash>/`` (``~/.cache`` when
unset), when that directory lies on the same file system as the checkout
(copy-on-write clones and hard-link-free copies stay as fast as in place) and
inside no git work tree. Otherwise they stay in ``.changeloop/sandboxes/`` and
the run says why in a note; ``GIT_CEILING_DIRECTORIES`` still stops git's
climb there (``changeloop.process.run``).

    place = sandbox_place(workspace_root)
    place.path      # the directory sandboxes are made in
    place.note      # None, or why it is inside the checkout
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass
from pathlib import Path

__all__ = ["IN_STATE", "Place", "sandbox_place"]

IN_STATE = Path(".changeloop") / "sandboxes"  # the fallback, relative to the workspace root


@dataclass(frozen=True)
class Place:
    path: Path
    note: str | None = None  # why the sandboxes are inside the checkout after all


_PLACES: dict[tuple[str, str], Place] = {}


def cache_home() -> Path | None:
    """``$XDG_CACHE_HOME``, else ``~/.cache`` (None when neither is an absolute path)."""
    value = os.environ.get("XDG_CACHE_HOME", "")
    if value and Path(value).is_absolute():
        return Path(value)
    home = os.environ.get("HOME", "")
    return Path(home) / ".cache" if home and Path(home).is_absolute() else None


def sandbox_place(root: Path) -> Place:
    """Where the sandboxes of the workspace at ``root`` go (made if needed); cached per process."""
    resolved = root.resolve()
    home = cache_home()
    key = (str(resolved), str(home))
    if key not in _PLACES:
        _PLACES[key] = _choose(resolved, home)
    return _PLACES[key]


def _choose(root: Path, home: Path | None) -> Place:
    fallback = root / IN_STATE
    if home is None:
        return Place(fallback, "sandboxes are inside the checkout: no cache directory (HOME unset)")
    base = home / "changeloop" / "sandboxes"
    try:
        base.mkdir(parents=True, exist_ok=True, mode=0o700)
        same_disk = base.stat().st_dev == root.stat().st_dev
    except OSError as exc:
        why = f"{base} cannot be used ({exc.strerror or exc})"
        return Place(fallback, f"sandboxes are inside the checkout: {why}")
    if not same_disk:
        return Place(
            fallback,
            f"sandboxes are inside the checkout: {base} is on another file system than the"
            " checkout (a copy there would be slow); set XDG_CACHE_HOME to a directory on"
            " the checkout's file system to move them out",
        )
    tree = _work_tree_above(base)
    if tree is not None:
        return Place(
            fallback,
            f"sandboxes are inside the checkout: {base} lies inside the git work tree {tree};"
            " set XDG_CACHE_HOME to a directory outside any work tree to move them out",
        )
    slug = re.sub(r"[^A-Za-z0-9_.-]", "_", root.name)[:40] or "workspace"
    digest = hashlib.sha256(os.fsencode(root)).hexdigest()[:12]
    return Place(base / f"{slug}-{digest}")


def _work_tree_above(path: Path) -> Path | None:
    """The nearest directory at or above ``path`` holding a ``.git`` (a work tree), if any."""
    for directory in (path, *path.parents):
        if (directory / ".git").exists() or (directory / ".git").is_symlink():
            return directory
    return None

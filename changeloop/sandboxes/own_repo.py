"""The sandbox's own git repository (docs/processes.md).

A sandbox is a repository of its own, so git in a provider never finds the
user's: ``<sandbox>/.git`` is where git's discovery stops. Its objects are
borrowed read-only through ``objects/info/alternates`` (git never writes into
an alternate), so nothing is copied; HEAD is detached at a commit of the
sandbox's content whose parent is the user's HEAD; the user's tags are copied
(``git describe``, hatch-vcs and setuptools-scm see the user's versions). It has
no remote, no hooks and none of the user's repository config: a provider's
``reset``, ``commit``, ``branch``, ``tag`` or ``config`` changes the sandbox only.

The content commit has a fixed author and committer and the user's HEAD commit
date, so the same content on the same HEAD is the same commit id. Absolute
symlinks that point into the user's checkout are re-pointed into the sandbox
(on disk, in its index and in that commit, so ``git reset --hard`` inside keeps
them safe); the content identity was computed before, from the user's link texts.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from pathlib import Path

from changeloop.git.commit import content_commit, own_env
from changeloop.git.repo import GitLayout, git, git_env

_SYMLINK_MODE = b"120000"


def init(root: Path, lay: GitLayout) -> None:
    """Make ``root/.git``: empty (no template: no hooks), objects borrowed from the user's."""
    root.mkdir(parents=True, exist_ok=True)
    git(
        ["init", "-q", "--template=", f"--object-format={lay.object_format}", str(root)],
        cwd=root,
        env=git_env(),
    )
    info = root / ".git" / "objects" / "info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "alternates").write_text(f"{lay.git_dir / 'objects'}\n", encoding="utf-8")
    shallow = lay.git_dir / "shallow"
    if shallow.is_file():
        # A shallow clone (CI's usual checkout): without its boundary the sandbox
        # would walk into parents that were never fetched.
        shutil.copyfile(shallow, root / ".git" / "shallow")


def activate(root: Path, paths: Sequence[str]) -> None:
    """Mark the submodules at ``paths`` (from ``root``'s top) active in the sandbox's config.

    They are checked out already (``submodule status`` shows them as the user
    sees them, not ``-``); no URL is set, so nothing in the sandbox can fetch.
    """
    for path in paths:
        git(
            ["config", "--add", "submodule.active", f":(literal){path}"],
            cwd=root,
            env=own_env(root),
        )


def repoint_links(root: Path, mirrors: Path) -> list[str]:
    """Re-point absolute symlinks into ``mirrors`` (the user's directory ``root`` copies).

    Looks at every symlink in the sandbox's index, rewrites on disk those whose
    target lies in ``mirrors`` (named directly or through a symlinked parent),
    and records the new link texts in the index. Returns the paths re-pointed.
    """
    env = own_env(root)
    listed = git(["ls-files", "-s", "-z"], cwd=root, env=env).stdout.split(b"\0")
    bases = {Path(os.path.normpath(mirrors)), mirrors.resolve()}
    changed: list[str] = []
    for entry in listed:
        if not entry.startswith(_SYMLINK_MODE):
            continue
        rel = os.fsdecode(entry.split(b"\t", 1)[1])
        link = root / rel
        try:
            target = link.readlink()
        except OSError:
            continue
        inside = _inside(target, bases)
        if inside is None:
            continue
        link.unlink()
        link.symlink_to(root / inside)
        changed.append(rel)
    if changed:
        listing = b"".join(os.fsencode(p) + b"\0" for p in changed)
        git(["update-index", "-z", "--stdin"], cwd=root, env=env, input_bytes=listing)
    return changed


def _inside(target: Path, bases: set[Path]) -> Path | None:
    """``target`` relative to one of ``bases`` (``.`` for a base itself), else None.

    The target's parent directory is also tried resolved, so that a link naming
    the checkout through a symlinked path counts; its last component is not
    followed (a link to a link stays a link to that link).
    """
    if not target.is_absolute():
        return None
    norm = Path(os.path.normpath(target))
    candidates = [norm]
    if norm.parent != norm:
        candidates.append(norm.parent.resolve() / norm.name)
    for candidate in candidates:
        for base in bases:
            if candidate.is_relative_to(base):
                return candidate.relative_to(base)
    return None


def set_head_and_tags(root: Path, commit: str, lay: GitLayout) -> None:
    """Detach the sandbox's HEAD at ``commit`` and copy the user's tags, in one transaction."""
    tags = git(
        ["for-each-ref", "--format=%(objectname) %(refname)", "refs/tags"],
        cwd=lay.toplevel,
    ).stdout.decode()
    lines = [f"update HEAD {commit}"]
    for line in tags.splitlines():
        oid, _, ref = line.partition(" ")
        if ref:
            lines.append(f"create {ref} {oid}")
    stdin = "".join(f"{line}\n" for line in lines).encode()
    git(["update-ref", "--no-deref", "--stdin"], cwd=root, env=own_env(root), input_bytes=stdin)


def finish(
    root: Path, mirrors: Path, tree: str, lay: GitLayout, *, commit: str | None = None
) -> str:
    """Once ``root`` holds its files and their index (of ``tree``): links, commit, HEAD, tags.

    ``commit``: the commit of ``tree`` HEAD must name (a submodule's, which its
    superproject's gitlink names); made here when not given or when a link was
    re-pointed (the tree changed).
    """
    if repoint_links(root, mirrors):
        tree = git(["write-tree"], cwd=root, env=own_env(root)).stdout.decode().strip()
        commit = None
    if commit is None:
        commit = content_commit(root, tree, lay)
    set_head_and_tags(root, commit, lay)
    return commit

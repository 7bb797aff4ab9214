"""The checkout's installed JavaScript dependencies, seen from a sandbox outside it.

A JavaScript project without a ``setup`` relies on Node's module resolution
walking up from where it runs into the checkout's ``node_modules``. From a
sandbox outside the checkout there is nothing above to find, so each ignored
``node_modules`` folder of the checkout (the top one and a workspace
package's) is linked into the sandbox at the same place: tests resolve the
packages the user installed, as they did from a sandbox inside the checkout.
A folder holding a workspace member's link (``node_modules/lib ->
../packages/lib``, as npm and pnpm make them) is made in the sandbox instead,
its entries linked one by one and the member's relative link kept as it is:
through a linked folder it would resolve into the checkout, and the tests would
import the checkout's build of the member rather than the sandbox's.
The links are read-only in spirit — a repository whose providers install or
rebuild dependencies declares a ``setup`` (``npm ci``), and then nothing is
linked. They are listed in the sandbox's ``.git/info/exclude`` (``node_modules/``
in a ``.gitignore`` matches folders, not links), so ``git status`` stays clean;
the content identity was taken before and never includes them.
"""

from __future__ import annotations

import os
from pathlib import Path

from changeloop.git.repo import git

__all__ = ["link_node_modules"]

_FOLDER = "node_modules"


def link_node_modules(source: Path, sandbox: Path) -> list[str]:
    """Link ``source``'s ignored ``node_modules`` folders into ``sandbox``; the paths linked."""
    if not ((source / "package.json").is_file() or (source / _FOLDER).is_dir()):
        return []  # not a JavaScript checkout: no listing of its ignored files
    listed = git(
        ["ls-files", "-z", "--others", "--ignored", "--exclude-standard", "--directory"],
        cwd=source,
        check=False,
    )
    linked: list[str] = []
    for raw in listed.stdout.split(b"\0"):
        if not raw.endswith(b"/"):
            continue
        rel = os.fsdecode(raw[:-1])
        if Path(rel).name != _FOLDER or (source / rel).is_symlink():
            continue
        target = sandbox / rel
        if target.exists() or target.is_symlink() or not target.parent.is_dir():
            continue
        if _holds_workspace_links(source.resolve() / rel, source):
            _link_entries(source.resolve() / rel, target, source.resolve())
        else:
            target.symlink_to(source.resolve() / rel, target_is_directory=True)
        linked.append(rel)
    if linked:
        _exclude(sandbox, linked)
    return linked


def _member_links(folder: Path, root: Path) -> list[Path]:
    """Entries of ``folder`` (a scope's entries too) that link to a member of ``root``."""
    found: list[Path] = []
    try:
        entries = list(folder.iterdir())
    except OSError:
        return found
    for entry in entries:
        if entry.name.startswith("@") and entry.is_dir() and not entry.is_symlink():
            found.extend(_member_links(entry, root))
        elif entry.is_symlink() and _is_member_link(entry, root):
            found.append(entry)
    return found


def _is_member_link(entry: Path, root: Path) -> bool:
    """A relative link that lands in ``root`` outside every ``node_modules`` (a member)."""
    text = entry.readlink()
    if text.is_absolute():
        return False
    landed = Path(os.path.normpath(entry.parent / text))
    return landed.is_relative_to(root) and _FOLDER not in landed.relative_to(root).parts


def _holds_workspace_links(folder: Path, source: Path) -> bool:
    return bool(_member_links(folder, source.resolve()))


def _link_entries(folder: Path, target: Path, root: Path) -> None:
    """Make ``target`` a real folder: members keep their relative link, the rest link back."""
    target.mkdir()
    for entry in folder.iterdir():
        into = target / entry.name
        if entry.name.startswith("@") and entry.is_dir() and not entry.is_symlink():
            _link_entries(entry, into, root)
        elif entry.is_symlink() and _is_member_link(entry, root):
            into.symlink_to(entry.readlink(), target_is_directory=entry.is_dir())
        else:
            into.symlink_to(entry, target_is_directory=entry.is_dir())


def _exclude(sandbox: Path, paths: list[str]) -> None:
    """Keep the links out of ``git status`` in the sandbox's own repository."""
    top = git(["rev-parse", "--show-toplevel", "--git-dir"], cwd=sandbox, check=False)
    lines = top.stdout.decode().splitlines()
    if top.returncode != 0 or len(lines) != 2:
        return
    toplevel, git_dir = Path(lines[0]), Path(lines[1])
    git_dir = git_dir if git_dir.is_absolute() else sandbox / git_dir
    prefix = sandbox.resolve().relative_to(Path(toplevel).resolve()).as_posix()
    entries = "".join(f"/{prefix + '/' if prefix != '.' else ''}{p}\n" for p in paths)
    info = git_dir / "info"
    info.mkdir(parents=True, exist_ok=True)
    with (info / "exclude").open("a", encoding="utf-8") as fh:
        fh.write(entries)

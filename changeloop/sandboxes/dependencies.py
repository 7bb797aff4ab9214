"""The checkout's installed JavaScript dependencies, seen from a sandbox outside it.

A JavaScript project without a ``setup`` relies on Node's module resolution
walking up from where it runs into the checkout's ``node_modules``. From a
sandbox outside the checkout there is nothing above to find, so each ignored
``node_modules`` folder of the checkout (the top one and a workspace
package's) is linked into the sandbox at the same place: tests resolve the
packages the user installed, as they did from a sandbox inside the checkout.
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
        target.symlink_to(source.resolve() / rel, target_is_directory=True)
        linked.append(rel)
    if linked:
        _exclude(sandbox, linked)
    return linked


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

"""The one interface every sandbox mode implements, and the bookkeeping they share.

Each sandbox has a private directory named ``<repository>.<pid>-<process
start>.<token>`` under the workspace's sandboxes directory (``place.py``), so
that a later run can tell a crashed run's leftovers (owner process gone, or
its pid reused by another process) from a live run's sandbox and remove only
the former (:func:`owner_alive`). The sandbox itself is a folder inside it
named like the checkout (tools that read their folder's name see the same
one), so whatever a provider makes beside it — ``git worktree add ../x`` —
lies in the private directory too and goes with it.
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import subprocess
from abc import ABC, abstractmethod
from pathlib import Path
from typing import Protocol

from changeloop.fsio import write_atomic
from changeloop.model import ContentIdentity, Repository, SandboxMode

_NAME = re.compile(r"^(?P<repo>.+)\.(?P<pid>\d+)-(?P<start>\d+)\.(?P<token>[0-9a-f]+)$")


class Sandbox(ABC):
    """Where one repository's providers run during one ``prove`` run.

    ``identity`` is the content identity of exactly what the sandbox held when
    it was made (docs/receipts.md); ``path`` is the directory standing for the
    repository (for a repository inside a bigger work tree, the subdirectory).
    """

    mode: SandboxMode
    path: Path
    identity: ContentIdentity
    # What a user should know about how it was made (an uninitialized submodule).
    notes: tuple[str, ...] = ()

    @abstractmethod
    def remove(self) -> None:
        """Delete the sandbox; safe to call twice."""


class Maker(Protocol):
    """What each mode module exposes (checked by mypy, listed in ``sandboxes.MODES``)."""

    def __call__(self, repo: Repository, base_dir: Path) -> Sandbox: ...


def process_start(pid: int) -> int:
    """The process's start time in clock ticks since boot (0 where /proc is absent)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii")
    except OSError:
        return 0
    # Field 22, counted after the parenthesised command name (which may hold spaces).
    return int(stat.rsplit(")", 1)[1].split()[19])


def new_dir(base_dir: Path, repo_name: str, folder: str = "") -> Path:
    """A fresh sandbox folder (not created) in a new private directory under ``base_dir``.

    ``folder``: the sandbox folder's name (the checkout's), ``repo_name`` when empty.
    """
    base_dir.mkdir(parents=True, exist_ok=True)
    ignore = base_dir / ".gitignore"
    if not ignore.exists():
        # Self-ignoring: a sandbox inside the user's checkout never shows in their status.
        # Written exclusively: a symlink planted here is never followed.
        write_atomic(ignore, b"*\n", durable=False)
    safe = re.sub(r"[^A-Za-z0-9_-]", "_", repo_name) or "repo"
    pid = os.getpid()
    private = base_dir / f"{safe}.{pid}-{process_start(pid)}.{secrets.token_hex(4)}"
    private.mkdir(mode=0o700)
    name = folder if folder and folder not in (".", "..") and "/" not in folder else safe
    return private / name


def remove_sandbox(folder: Path) -> None:
    """Delete a sandbox folder with its private directory (what was made beside it too)."""
    holder = folder.parent
    remove_tree(holder if _NAME.match(holder.name) else folder)


def owner_alive(path: Path) -> bool | None:
    """Whether the process that made sandbox ``path`` still runs; None if not ours."""
    match = _NAME.match(path.name)
    if match is None:
        return None
    pid, start = int(match["pid"]), int(match["start"])
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, OverflowError):  # gone, or a pid no process can have
        return False
    except PermissionError:
        return True
    return start == 0 or process_start(pid) == start


def remove_tree(path: Path) -> None:
    """Delete a directory tree fast, even one a provider made read-only."""
    if not path.exists() and not path.is_symlink():
        return
    if shutil.which("rm"):
        subprocess.run(["rm", "-rf", "--", str(path)], check=False, capture_output=True)
    if path.exists():
        for dirpath, dirnames, _files in os.walk(path):
            for name in dirnames:
                full = Path(dirpath) / name
                if not full.is_symlink():
                    full.chmod(0o700)
        shutil.rmtree(path, ignore_errors=True)


_CEILINGS: dict[str, str | None] = {}


def git_ceiling(cwd: Path) -> str | None:
    """``GIT_CEILING_DIRECTORIES`` for a run's command working in ``cwd``: git never climbs out.

    Inside a sandbox: its private directory and every directory above it, so git
    finds the sandbox's own repository and nothing else — not after a provider
    deleted or damaged the sandbox's ``.git``, not when it runs git from ``..``.
    In a checkout (``--sandbox none``): every directory above its work tree.
    None where no repository is above ``cwd``.
    """
    key = str(cwd)
    if key not in _CEILINGS:
        _CEILINGS[key] = _ceiling(Path(os.path.realpath(cwd)))
    return _CEILINGS[key]


def _ceiling(path: Path) -> str | None:
    top = next((p for p in (path, *path.parents) if _NAME.match(p.name)), None)
    if top is not None:  # a sandbox: its private directory is the first ceiling
        above = [top, *top.parents]
    else:
        tree = next((p for p in (path, *path.parents) if (p / ".git").exists()), None)
        if tree is None:
            return None
        above = list(tree.parents)
    return ":".join(str(p) for p in above if p != p.parent) or None

"""Layout of ``.changeloop/`` (docs/design.md), in one place, and the rules that keep it ours.

``keys/`` the workspace key; ``cache/`` pass receipts by fingerprint;
``runs/<run-id>/`` logs, reports and receipts of one run;
``receipts/<change>/`` the latest receipt per provider and capability;
``durations.json`` how long providers took, for critical-path scheduling;
``decisions/<change>.json`` the signed no-change record (changeloop.nochange).

A cloned repository must not be able to plant this state (docs/threat-model.md): a
committed ``.changeloop -> somewhere`` symlink plus a committed key and cache
entries sealed with it would make ``prove`` reuse "passes" nothing ran.
:func:`check_state` refuses that before anything runs (exit 2); it is called
when a :class:`StateDir` is made, so every verb that opens the state gets it.
Damaged state that could only be ours (wrong JSON, a directory where a file
belongs) is ignored and rebuilt instead (docs/processes.md).
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import secrets
import shutil
import stat
import subprocess
from collections.abc import Collection
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from changeloop import fsio
from changeloop.errors import StateRefused, filesystem_cause
from changeloop.workspace.accepted import ACCEPTED

STATE = ".changeloop"
SUBDIRS = ("keys", "cache", "runs", "receipts", "sandboxes", "decisions")
WORKSPACE_KEY = Path("keys") / "local.key"
_DURATIONS_LIMIT = 4 * fsio.MIB
_REAL_DIR_FIX = (
    "delete it (`rm {path}`); changeloop makes a real directory of its own on the next run"
    " — .changeloop/ is local state, never part of a repository"
)


@dataclass(frozen=True)
class StateDir:
    root: Path  # the workspace root

    def __post_init__(self) -> None:
        check_state(self.root)

    @property
    def path(self) -> Path:
        return self.root / STATE

    @property
    def cache(self) -> Path:
        return self.path / "cache"

    @property
    def runs(self) -> Path:
        return self.path / "runs"

    @property
    def sandboxes(self) -> Path:
        return self.path / "sandboxes"

    def latest(self, change: str) -> Path:
        return self.path / "receipts" / change

    def latest_dir(self, change: str) -> Path:
        """``receipts/<change>/``, clearing a file that stands where the directory belongs
        (damaged state: rebuilt; other stray files there are only noted, ``stray_notes``)."""
        path = self.latest(change)
        with contextlib.suppress(OSError):
            if not path.is_symlink() and path.exists() and not path.is_dir():
                path.unlink()
        return path

    def new_run_dir(
        self, run_id: str | None = None, *, spare: Path | None = None, folders: Collection[str] = ()
    ) -> tuple[str, Path]:
        """A fresh ``runs/<run-id>/`` (``run_id``: one :func:`new_run_id` gave earlier);
        damaged leftovers of earlier runs are cleared first.

        ``spare``: an old run ``prune.make_room`` left for this one; it becomes the new run,
        emptied but for its folders named in ``folders``, kept empty (no directory is made or
        removed for them). A spare that cannot be taken over is removed, and a new
        directory made.
        """
        _repair_receipts(self.path / "receipts")
        run_id = run_id or new_run_id()
        path = self.runs / run_id
        if spare is not None and _take_over(spare, path, frozenset(folders)):
            return run_id, path
        try:
            path.mkdir(parents=True, exist_ok=False)
        except OSError as exc:
            raise unusable(path, exc) from exc
        return run_id, path

    # -- durations remembered between runs (critical-path weights) --------
    def _durations_file(self) -> Path:
        return self.path / "durations.json"

    def _read_durations(self) -> dict[str, dict[str, float]]:
        """Every change's durations; anything damaged (shape, depth, a directory) reads as none."""
        data = fsio.load_state_json(self._durations_file(), limit=_DURATIONS_LIMIT)
        if not isinstance(data, dict):
            return {}
        clean: dict[str, dict[str, float]] = {}
        for change, per_change in data.items():
            if not isinstance(per_change, dict):
                continue
            clean[change] = {
                name: float(value)
                for name, value in per_change.items()
                if isinstance(value, int | float)
                and not isinstance(value, bool)
                and 0 <= value < 1e9
            }
        return clean

    def load_durations(self, change: str) -> dict[str, float]:
        return self._read_durations().get(change, {})

    def save_durations(self, change: str, durations: dict[str, float]) -> None:
        """Remember ``durations``; they are hints, so a write that fails is skipped, not fatal."""
        data = self._read_durations()
        data.setdefault(change, {}).update(durations)
        target = self._durations_file()
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            clear_non_file(target)
            # no fsync: a hint lost (or torn) by a power cut reads as none (_read_durations)
            payload = json.dumps(data, sort_keys=True).encode("utf-8")
            fsio.write_atomic(target, payload, durable=False)
        except OSError:
            return


def new_run_id() -> str:
    """A run's id: the UTC second it started and six random hex digits."""
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    return f"{stamp}-{secrets.token_hex(3)}"


def check_state(root: Path) -> None:
    """Refuse (exit 2) a workspace state this checkout could have planted, or one we cannot use.

    ``.changeloop/`` and its ``keys/``, ``cache/``, ``runs/``, ``receipts/``,
    ``sandboxes/`` must be real directories (absent is fine: they are made on
    first use); nothing under ``.changeloop/`` may be tracked by git; the
    workspace key, when present, must be a regular file with no group or other
    permission bits.
    """
    accepted = ACCEPTED.get()
    key = str(root.absolute())
    if accepted is not None and key in accepted:
        return
    state = root / STATE
    if not _check_dir(state):
        return  # no state yet (made on first use): the next call looks again
    _check_access(state)
    for name in SUBDIRS:
        if _check_dir(state / name):
            _check_access(state / name)
    receipts = state / "receipts"
    for entry in _entries(receipts):
        if entry.is_symlink() or entry.is_dir():  # a link planted where receipts are written
            _check_dir(entry)
        # anything else is a stray file no change's receipts live in: ignored (stray_notes)
    _check_tracked(root)
    _check_workspace_key(state / WORKSPACE_KEY)
    if accepted is not None:
        accepted.add(key)


def stray_notes(root: Path) -> list[str]:
    """Notes naming what lies in ``.changeloop/receipts/`` and is not a change's directory.

    Such a file is ignored, never a refusal: nothing reads it, and receipts are
    written into their change's own directory.
    """
    receipts = root / STATE / "receipts"
    try:
        entries = sorted(receipts.iterdir())
    except OSError:
        return []
    return [
        f"ignoring {entry.relative_to(root)}: not a change's receipts directory (remove it)"
        for entry in entries
        if not entry.is_symlink() and not entry.is_dir()
    ]


def _check_dir(path: Path) -> bool:
    """Whether ``path`` is a real directory; refusal when it is a symlink or not a directory."""
    try:
        info = path.lstat()
    except FileNotFoundError:
        return False
    except OSError as exc:
        raise unusable(path, exc) from exc
    if stat.S_ISLNK(info.st_mode):
        target = path.readlink()
        raise StateRefused(
            path,
            f"{path} is a symlink (to {target}); changeloop's state must be a real directory of"
            " the workspace, or a repository could plant keys and cached passes",
            _REAL_DIR_FIX.format(path=path),
        )
    if not stat.S_ISDIR(info.st_mode):
        raise StateRefused(
            path,
            f"{path} is not a directory; changeloop keeps its state there",
            f"move or delete {path}; changeloop makes the directory on the next run",
        )
    return True


def _check_access(directory: Path) -> None:
    """A state directory we cannot list or write is refused now, not met mid-run.

    A read-only file system says so (``os.access`` answers it like a missing
    permission): its fix is another one.
    """
    if not os.access(directory, os.R_OK | os.W_OK | os.X_OK):
        if _read_only(directory):
            raise unusable(directory, OSError(errno.EROFS, os.strerror(errno.EROFS)))
        raise StateRefused(
            directory,
            f"cannot use {directory}: permission denied (changeloop reads and writes its state"
            " there)",
            f"run changeloop as the user who owns {directory}, or fix its permissions",
        )


def _read_only(path: Path) -> bool:
    try:
        return bool(os.statvfs(path).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def _entries(directory: Path) -> list[Path]:
    try:
        return sorted(directory.iterdir())
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise unusable(directory, exc) from exc


def _check_tracked(root: Path) -> None:
    """Refuse any file under ``.changeloop/`` that git tracks (a committed key or cache)."""
    try:
        done = subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--", STATE],
            cwd=root,
            capture_output=True,
            check=False,
            timeout=60,
            env={**os.environ, "GIT_OPTIONAL_LOCKS": "0"},
        )
    except (OSError, subprocess.SubprocessError):
        return  # no git: nothing can be tracked
    if done.returncode != 0:
        return  # not a work tree
    tracked = [p.decode("utf-8", "replace") for p in done.stdout.split(b"\0") if p]
    if not tracked:
        return
    shown = ", ".join(tracked[:3]) + (f" and {len(tracked) - 3} more" if len(tracked) > 3 else "")
    raise StateRefused(
        root / STATE,
        f"git tracks files under {root / STATE} ({shown}); committed state (a key, cached"
        " passes) would let a repository make prove say PROVEN with nothing run",
        "remove it from the repository and from disk: `git rm -r --cached .changeloop && "
        "rm -rf .changeloop`, then commit; changeloop remakes its state on the next run",
    )


def _check_workspace_key(path: Path) -> None:
    try:
        info = path.lstat()
    except FileNotFoundError:
        return
    except OSError as exc:
        raise unusable(path, exc) from exc
    if not stat.S_ISREG(info.st_mode):
        raise StateRefused(
            path,
            f"the workspace key {path} is not a regular file",
            f"delete {path} (and local.pub beside it); changeloop makes a new key on the next"
            " run (cached passes of the old key are then run again)",
        )
    if info.st_mode & 0o077:
        raise StateRefused(
            path,
            f"the workspace key {path} has mode {stat.S_IMODE(info.st_mode):04o}; a private key"
            " must not be readable or writable by group or others",
            f"`chmod 600 {path}` if you made it, or delete it to get a new one",
        )


def clear_non_file(path: Path) -> None:
    """Remove a directory (never followed if a symlink) standing where our file belongs."""
    try:
        info = path.lstat()
    except FileNotFoundError:
        return
    if stat.S_ISDIR(info.st_mode):
        shutil.rmtree(path, ignore_errors=True)


def _take_over(spare: Path, path: Path, folders: frozenset[str]) -> bool:
    """``spare`` renamed to ``path`` and emptied, its ``folders`` kept (emptied too); False
    when it could not be (what is left of it is removed)."""
    try:
        spare.rename(path)
    except OSError:  # gone (another prove took it, or pruned it): a new directory then
        return False
    if not stat.S_ISDIR(path.lstat().st_mode):  # a link swapped in: never emptied through
        path.unlink()
        return False
    try:
        for entry in os.scandir(path):
            if entry.name in folders and entry.is_dir(follow_symlinks=False):
                for inner in os.scandir(entry.path):
                    _remove_entry(inner)
            else:
                _remove_entry(entry)
    except OSError:
        shutil.rmtree(path, ignore_errors=True)
        return False
    return True


def _remove_entry(entry: os.DirEntry[str]) -> None:
    if entry.is_dir(follow_symlinks=False):
        shutil.rmtree(entry.path)
    else:
        Path(entry.path).unlink()


def _repair_receipts(receipts: Path) -> None:
    """``receipts/<change>/`` holds only regular files we wrote: clear anything else there."""
    for change_dir in _entries(receipts):
        try:  # the directory's own entry types (d_type): no lstat per receipt
            with os.scandir(change_dir) as listing:
                entries = list(listing)
        except OSError:
            continue
        for entry in entries:
            try:
                if entry.is_file(follow_symlinks=False):
                    continue
                planted_dir = entry.is_dir(follow_symlinks=False)
            except OSError:
                continue
            if planted_dir:
                shutil.rmtree(entry.path, ignore_errors=True)
            else:  # a symlink, FIFO, socket or device
                with contextlib.suppress(OSError):
                    Path(entry.path).unlink()


def unusable(path: Path, exc: OSError) -> StateRefused:
    """A filesystem error on the state, as a refusal naming the path and its real cause (exit 2).

    A read-only file system or a full disk is said as such, never as a permissions problem.
    """
    where = Path(exc.filename) if exc.filename else path
    cause, fix = filesystem_cause(exc, where if where.is_dir() else where.parent)
    return StateRefused(where, f"cannot use {where}: {cause}", fix)


def ensure_gitignored(root: Path) -> None:
    """Keep ``.changeloop/`` out of the user's commits without touching their .gitignore."""
    state = root / STATE
    _check_dir(state)
    ignore = state / ".gitignore"
    try:
        state.mkdir(exist_ok=True)
        if not ignore.exists() or ignore.is_symlink():
            fsio.write_atomic(ignore, b"*\n")
    except OSError as exc:
        raise unusable(state, exc) from exc

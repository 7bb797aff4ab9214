"""What ``.changeloop/`` holds, and freeing what nothing needs any more.

Two things grow with every prove: ``runs/<id>/`` (each run's logs, reports and
receipt copies) and ``cache/`` (one entry per fingerprint: every edit makes
new ones). The policy keeps:

- per change, its last :data:`KEEP_RUNS` runs (``CHANGELOOP_KEEP_RUNS``), so
  ``report`` and ``gate``'s reasons have the latest runs to show; a run with
  process records (still running, or killed and not yet swept) is never
  touched, and a run that never wrote ``run.json`` (killed) goes after a day;
- every cache entry used (reused, or written) within :data:`CACHE_DAYS` days
  (``CHANGELOOP_CACHE_DAYS``), and whatever the latest receipts of a change
  (their fingerprints) or a no-change record (its cache entries) refer to,
  however old: pruning never turns a re-prove that would be answered or cached
  into a run.

``prove`` prunes its change's runs as it goes, and the cache once a day;
``changeloop state prune`` does both now, ``changeloop state`` shows the sizes.
A reused cache entry gets its access time set (its modification time, which the
no-change record checks, stays): that is when it was last used.

    policy = Policy.from_env()
    freed = prune_runs(state_dir, "add-greeting", policy)
    freed = prune_cache(state_dir, policy)
    held = inventory(state_dir, policy)
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import re
import shutil
import stat
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from changeloop import fsio
from changeloop.workspace.state import STATE

__all__ = [
    "CACHE_DAYS",
    "KEEP_RUNS",
    "Freed",
    "Policy",
    "inventory",
    "make_room",
    "prune_cache",
    "prune_cache_daily",
    "prune_runs",
    "touch_used",
]

KEEP_RUNS = 5
CACHE_DAYS = 30.0
ORPHAN_AGE_S = 24 * 3600.0  # a run that never wrote run.json (killed) goes after this long
PRUNE_STAMP = "pruned"  # .changeloop/pruned: when the cache was last pruned by a prove
_DAY_S = 24 * 3600.0
_RUN_HEAD = 4096  # run.json names its change in its first lines
_CHANGE = re.compile(rb'"change":\s*("(?:[^"\\]|\\.)*")')
_FINGERPRINT = re.compile(r"sha256:([0-9a-f]{64})")


@dataclass(frozen=True)
class Policy:
    keep_runs: int = KEEP_RUNS
    cache_days: float = CACHE_DAYS

    @classmethod
    def from_env(cls, keep_runs: int | None = None, cache_days: float | None = None) -> Policy:
        """The policy: the arguments given, else ``CHANGELOOP_KEEP_RUNS`` /
        ``CHANGELOOP_CACHE_DAYS``, else the defaults (a value that is no number is the default)."""
        if keep_runs is None:
            keep_runs = int(_number("CHANGELOOP_KEEP_RUNS", KEEP_RUNS))
        if cache_days is None:
            cache_days = _number("CHANGELOOP_CACHE_DAYS", CACHE_DAYS)
        return cls(max(1, keep_runs), max(0.0, cache_days))

    def to_json(self) -> dict[str, Any]:
        return {"keepRuns": self.keep_runs, "cacheDays": self.cache_days}


def _number(name: str, default: float) -> float:
    try:
        value = float(os.environ.get(name, ""))
    except ValueError:
        return default
    return value if value == value and abs(value) < 1e9 else default  # noqa: PLR0124 - NaN


@dataclass
class Freed:
    """What a prune removed."""

    runs: list[str] = field(default_factory=list)
    cache: list[str] = field(default_factory=list)
    files: int = 0
    bytes: int = 0

    def add(self, other: Freed) -> None:
        self.runs += other.runs
        self.cache += other.cache
        self.files += other.files
        self.bytes += other.bytes

    def to_json(self) -> dict[str, Any]:
        return {
            "runs": self.runs,
            "cache": self.cache,
            "files": self.files,
            "bytes": self.bytes,
        }


# -- runs ----------------------------------------------------------------------
def run_change(run_dir: Path) -> str | None:
    """The change a run proved (from its ``run.json``); None when it wrote none."""
    head = _head(run_dir / "run.json")
    if head is None:
        return None
    found = _CHANGE.search(head)
    if found is None:
        return None
    try:
        change = json.loads(found[1])
    except ValueError:
        return None
    return change if isinstance(change, str) else None


def _head(path: Path) -> bytes | None:
    """The first bytes of a regular file of ours (never through a link, never a FIFO waited on)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        return os.read(fd, _RUN_HEAD)
    except OSError:
        return None
    finally:
        os.close(fd)


def _runs(state: Path) -> list[Path]:
    """The run directories, oldest first."""
    try:
        entries = [p for p in (state / "runs").iterdir() if p.is_dir() and not p.is_symlink()]
    except OSError:
        return []
    return sorted(entries, key=_started)


def _started(run: Path) -> tuple[str, int]:
    """A run's place in time: its id's UTC second, then when its ``run.json`` was written
    (several runs can start within one second; their ids end in random digits)."""
    try:
        written = (run / "run.json").lstat().st_mtime_ns
    except OSError:
        written = 0
    return run.name.partition("-")[0], written


def prune_runs(state: Path, change: str | None, policy: Policy, *, count: bool = False) -> Freed:
    """Remove the runs of ``change`` (None: of every change) beyond the policy, and old orphans.

    ``count``: measure what is removed (files, bytes) for a report.
    """
    freed = Freed()
    for run in _due(state, change, policy, freed, count):
        _remove(run, freed, count)
    return freed


def _due(state: Path, change: str | None, policy: Policy, freed: Freed, count: bool) -> list[Path]:
    """The runs of ``change`` (None: of every change) beyond the policy, oldest first; old
    orphans are removed on the way."""
    by_change: dict[str, list[Path]] = {}
    now = time.time()
    for run in _runs(state):
        if (run / "pgroups").exists():
            continue  # running, or killed and not swept yet: the sweep's, never ours
        owner = run_change(run)
        if owner is None:
            if _age(run, now) > ORPHAN_AGE_S:
                _remove(run, freed, count)
            continue
        if change is None or owner == change:
            by_change.setdefault(owner, []).append(run)
    return [
        run for runs in by_change.values() for run in runs[: max(0, len(runs) - policy.keep_runs)]
    ]


def _age(path: Path, now: float) -> float:
    try:
        return now - path.lstat().st_mtime
    except OSError:
        return 0.0


def _remove(run: Path, freed: Freed, count: bool) -> None:
    if count:
        files, size = _measure(run)
        freed.files += files
        freed.bytes += size
    shutil.rmtree(run, ignore_errors=True)
    freed.runs.append(run.name)


def _measure(path: Path) -> tuple[int, int]:
    files = size = 0
    for dirpath, _dirs, names in os.walk(path):
        for name in names:
            with contextlib.suppress(OSError):
                size += os.lstat(os.path.join(dirpath, name)).st_size  # noqa: PTH118
                files += 1
    return files, size


# -- cache ---------------------------------------------------------------------
def touch_used(entry: Path) -> None:
    """``entry`` was just used: its access time says so (its modification time stays)."""
    with contextlib.suppress(OSError):
        info = entry.lstat()
        os.utime(entry, ns=(time.time_ns(), info.st_mtime_ns), follow_symlinks=False)


def referenced_entries(state: Path) -> set[str]:
    """Cache entry names the latest receipts (by fingerprint) or a no-change record name."""
    names: set[str] = set()
    with contextlib.suppress(OSError):
        for change in (state / "receipts").iterdir():
            if not change.is_dir() or change.is_symlink():
                continue
            for receipt in change.glob("*.json"):
                predicate = _payload(receipt).get("predicate")
                ext = predicate.get("changeloop") if isinstance(predicate, dict) else None
                value = ext.get("fingerprint") if isinstance(ext, dict) else None
                found = _FINGERPRINT.fullmatch(value) if isinstance(value, str) else None
                if found is not None:
                    names.add(f"{found[1]}.json")
    with contextlib.suppress(OSError):
        for record in (state / "decisions").glob("*.json"):
            cache = _payload(record).get("cache")
            if isinstance(cache, dict):
                names.update(Path(str(name)).name for name in cache)
    return names


def _payload(path: Path) -> dict[str, Any]:
    """The decoded payload of an envelope file of ours ({} when it is not one)."""
    envelope = fsio.load_state_json(path, limit=4 << 20)
    try:
        doc = json.loads(base64.b64decode(envelope["payload"]))
    except (TypeError, KeyError, ValueError, RecursionError):
        return {}
    return doc if isinstance(doc, dict) else {}


def _last_used(info: os.stat_result) -> float:
    return max(info.st_atime, info.st_mtime)


def prune_cache(state: Path, policy: Policy, *, now: float | None = None) -> Freed:
    """Remove cache entries unused for ``policy.cache_days`` days that nothing refers to."""
    freed = Freed()
    now = time.time() if now is None else now
    cutoff = now - policy.cache_days * _DAY_S
    try:
        entries = list((state / "cache").iterdir())
    except OSError:
        return freed
    kept: set[str] | None = None
    for entry in entries:
        try:
            info = entry.lstat()
        except OSError:
            continue
        if not entry.name.endswith(".json") or _last_used(info) >= cutoff:
            continue
        if kept is None:  # only once something is old enough to go
            kept = referenced_entries(state)
        if entry.name in kept:
            continue
        with contextlib.suppress(OSError):
            entry.unlink()
            freed.cache.append(entry.name)
            freed.files += 1
            freed.bytes += info.st_size
    return freed


def prune_cache_daily(state: Path, policy: Policy) -> Freed:
    """:func:`prune_cache` at most once a day (``.changeloop/pruned`` says when it last ran)."""
    stamp = state / PRUNE_STAMP
    now = time.time()
    if _age(stamp, now) < _DAY_S and stamp.exists():
        return Freed()
    with contextlib.suppress(OSError):
        fsio.write_atomic(stamp, b"", durable=False)
    return prune_cache(state, policy, now=now)


# -- what is held --------------------------------------------------------------
def inventory(state: Path, policy: Policy, sandboxes: Path | None = None) -> dict[str, Any]:
    """Files and bytes per part of the state, runs per change, cache entries due to go."""
    parts: dict[str, dict[str, Any]] = {}
    total_files = total_bytes = 0
    try:
        children = sorted(state.iterdir())
    except OSError:
        children = []
    for child in children:
        if child.is_symlink():
            continue
        files, size = _measure(child) if child.is_dir() else (1, child.lstat().st_size)
        name = child.name if child.is_dir() else "other"
        part = parts.setdefault(name, {"files": 0, "bytes": 0})
        part["files"] += files
        part["bytes"] += size
        total_files += files
        total_bytes += size
    runs: dict[str, int] = {}
    for run in _runs(state):
        owner = run_change(run) or "(unfinished)"
        runs[owner] = runs.get(owner, 0) + 1
    if "runs" in parts:
        parts["runs"]["perChange"] = dict(sorted(runs.items()))
    cutoff = time.time() - policy.cache_days * _DAY_S
    due = 0
    with contextlib.suppress(OSError):
        kept = referenced_entries(state)
        for entry in (state / "cache").iterdir():
            with contextlib.suppress(OSError):
                if entry.name not in kept and _last_used(entry.lstat()) < cutoff:
                    due += 1
    if "cache" in parts:
        parts["cache"]["unused"] = due
    out: dict[str, Any] = {
        "parts": parts,
        "total": {"files": total_files, "bytes": total_bytes},
        "policy": policy.to_json(),
    }
    if sandboxes is not None:
        files, size = _measure(sandboxes) if sandboxes.is_dir() else (0, 0)
        out["sandboxes"] = {"path": str(sandboxes), "files": files, "bytes": size}
    return out


def make_room(state: Path, change: str) -> Path | None:
    """Before ``prove`` adds a run of ``change``: its runs beyond the policy's count less one
    go, so that the new one keeps the count; the newest of them is left in place and handed
    back, for an answer from the no-change record to lay its run out in
    (``StateDir.new_run_dir``'s ``spare``). Making a hundred directories right after
    removing as many is slow where the file system does not reuse a freed inode at once
    (ext4 skips those freed in the last minute): the target it holds is a re-prove with
    nothing changed (bench/incremental.py). A spare nobody takes is an old run the
    next prune removes. Never an error: None when no run is due or it could not be listed.
    """
    policy = Policy.from_env()
    room = replace(policy, keep_runs=policy.keep_runs - 1)
    freed = Freed()
    try:
        due = _due(state, change, room, freed, False)
        for run in due[:-1]:
            _remove(run, freed, False)
    except OSError:
        return None
    return due[-1] if due else None


def prune_after_prove(root: Path, change: str, *, cache: bool = True) -> Freed:
    """What ``prove`` frees as it goes: its change's old runs, and (``cache``) the cache once
    a day. Never an error: a prune that cannot happen now happens next time."""
    state = root / STATE
    policy = Policy.from_env()
    freed = Freed()
    with contextlib.suppress(OSError):
        freed.add(prune_runs(state, change, policy))
        if cache:
            freed.add(prune_cache_daily(state, policy))
    return freed

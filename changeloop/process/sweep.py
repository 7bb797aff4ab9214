"""The next ``prove`` ends what a killed run left: its processes, temp files and sandboxes.

A run counts as dead only when its owner (``pgroups/owner.json``, written by
:mod:`changeloop.process.groups`) is gone, pid reuse included; then its
recorded groups and every process carrying its owner marker are ended, and
the temp files whose writer is gone are removed (docs/processes.md)::

    report = sweep(root / ".changeloop")   # report.runs, report.processes, report.removed
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from changeloop.errors import ChangeloopError
from changeloop.fsio import load_state_json
from changeloop.process.groups import (
    OWNER_ENV,
    OWNER_FILE,
    PGROUPS,
    RUN_ENV,
    is_alive,
    owner_marker,
    process_start,
    stat_fields,
    system_tempdir,
)
from changeloop.workspace.state import STATE, check_state

SWEEP_GRACE_S = 2.0
# Temp files of atomic writes name their writer: ``.<name>.<pid>[.<hex>].tmp``
# or ``.<name>.tmp<pid>``.
_TMP_PID = re.compile(r"\.(\d+)(?:\.[0-9a-f]+)?\.tmp$|\.tmp(\d+)$")
_PRIVATE_TMP = re.compile(r"^changeloop-(\d+)-(\d+)$")
_LEGACY_INDEX = "changeloop-index-"  # identity's temporary index made outside the CLI
UNATTRIBUTED_AGE_S = 3600.0  # a temp file naming no writer is left alone this long


@dataclass
class Sweep:
    """What one sweep found and removed (for logs and tests)."""

    runs: list[str] = field(default_factory=list)  # runs whose owner was gone
    processes: int = 0  # processes signalled
    removed: list[Path] = field(default_factory=list)  # temp files, dirs, sandboxes


@dataclass(frozen=True)
class _DeadRun:
    run_dir: Path
    markers: frozenset[bytes]  # b"CHANGELOOP_OWNER=<pid>-<start>"
    groups: tuple[tuple[int, int], ...]  # (pgid, leader start)
    owner_start: int  # the earliest owner start time known (0: unknown)


def sweep(state_dir: Path, *, grace_s: float = SWEEP_GRACE_S, light: bool = False) -> Sweep:
    """End the process groups of runs whose owner is gone, then remove their temp files.

    ``state_dir`` is the workspace's ``.changeloop``. A run counts as gone only
    when its owner's pid is absent or now belongs to a process that started at
    another time, so a live run — or a new process that reused a dead run's
    pid — is never touched. Then: leftover ``*.tmp*`` files of atomic writes
    whose writer is gone, private temp directories (identity's temporary
    indexes) of changeloop processes that are gone, and stale sandboxes.
    ``light``: the processes and the state's own temp files only (a verb that
    answers without running leaves the rest to the next full ``prove``).
    """
    report = Sweep()
    # Damaged state is skipped, never an error: the sweep must not stop a run.
    with contextlib.suppress(OSError):
        dead = _dead_runs(state_dir / "runs")
        if dead:
            report.processes = _end_processes(dead, grace_s)
            for run in dead:
                report.removed += _tmp_files_in(run.run_dir)
                _remove_tree(run.run_dir / PGROUPS)
                report.runs.append(run.run_dir.name)
    with contextlib.suppress(OSError):
        report.removed += _stale_tmp_files(state_dir)
    if light:
        return report
    with contextlib.suppress(OSError):
        report.removed += _stale_tmp_in_recent_runs(state_dir / "runs")
        report.removed += _stale_private_tempdirs()
    from changeloop import sandboxes as boxes  # noqa: PLC0415 - kept off the no-change answer's imports
    from changeloop.sandboxes.place import sandbox_place  # noqa: PLC0415 - kept off the no-change answer's imports

    # in the user's cache directory, and where an older changeloop (or the fallback) made them
    for place in (sandbox_place(state_dir.parent).path, state_dir / "sandboxes"):
        with contextlib.suppress(OSError):
            report.removed += boxes.cleanup_stale(place)
    return report


def sweep_before_answering(root: Path) -> Sweep | None:
    """The sweep of a verb that answers without a run (``prove`` from its record, ``gate``).

    What a killed run left (its processes, the ports they hold, temp files) is
    ended before the answer, as a full ``prove`` does; sandboxes and temp
    directories are left to that. Only once the workspace state passed its checks: a planted
    ``.changeloop`` never chooses what gets signalled (the full path refuses it).
    """
    state_dir = root / STATE
    if not (state_dir / "runs").is_dir():
        return None
    try:
        check_state(root)
    except (ChangeloopError, OSError):
        return None
    return sweep(state_dir, light=True)


def end_run_leftovers(run_dir: Path, *, grace_s: float = SWEEP_GRACE_S) -> int:
    """At a run's end: TERM, grace, KILL what still carries its marker (``setsid`` daemons).

    Every process group of the run has ended by now; what is left left the group
    on purpose and still carries ``CHANGELOOP_OWNER`` of this process and
    ``CHANGELOOP_RUN`` of this run. Returns how many were signalled.
    """
    marker = f"{OWNER_ENV}={owner_marker()}".encode()
    run = f"{RUN_ENV}={run_dir.name}".encode()
    since = int(owner_marker().rsplit("-", 1)[1])
    return _end_marked(marker, run, since, grace_s)


def _read_json(path: Path) -> dict[str, Any] | None:
    """A record of ours; never a FIFO waited on, a link followed or a large file read."""
    doc = load_state_json(path, limit=65536)
    return doc if isinstance(doc, dict) else None


def _int(doc: dict[str, Any] | None, key: str, *, least: int = 1) -> int | None:
    """A plausible pid or start time from a record that may be damaged."""
    value = doc.get(key) if doc else None
    if isinstance(value, int) and not isinstance(value, bool) and least <= value < 2**63:
        return value
    return None


def _dead_runs(runs: Path) -> list[_DeadRun]:
    try:
        entries = list(runs.iterdir())
    except OSError:
        return []
    dead: list[_DeadRun] = []
    boot = _boot_time()
    for run_dir in entries:
        for staging in run_dir.glob(f".{PGROUPS}.*.tmp"):  # killed while claiming the run
            if _writer_gone(staging, boot):
                _remove_tree(staging)
        directory = run_dir / PGROUPS
        if run_dir.is_symlink() or not directory.is_dir() or directory.is_symlink():
            continue
        owner = _read_json(directory / OWNER_FILE)
        records = [
            doc
            for path in directory.glob("*.json")
            if path.name != OWNER_FILE and (doc := _read_json(path)) is not None
        ]
        owners = {(_int(owner, "pid"), _int(owner, "start", least=0))}
        owners |= {(_int(r, "owner"), _int(r, "ownerStart", least=0)) for r in records}
        known = {(pid, start) for pid, start in owners if pid is not None and start is not None}
        if not known and _age(directory) < 60:
            continue  # a run writing its owner record this very moment
        if any(is_alive(pid, start) for pid, start in known):
            continue
        groups = tuple(
            (pgid, start)
            for r in records
            if (pgid := _int(r, "pgid")) is not None
            and (start := _int(r, "start", least=0)) is not None
        )
        markers = frozenset(f"{OWNER_ENV}={pid}-{start}".encode() for pid, start in known)
        earliest = min((start for _, start in known), default=0)
        dead.append(_DeadRun(run_dir, markers, groups, earliest))
    return dead


def _age(path: Path) -> float:
    try:
        return time.time() - path.stat().st_mtime
    except OSError:
        return 0.0


def _end_processes(dead: list[_DeadRun], grace_s: float) -> int:
    """TERM, grace, KILL every process of the dead runs; returns how many were signalled.

    A recorded group is ended only while its leader is the very process that
    was recorded (same start time). Members whose leader is gone, and anything
    started between spawn and record, are found by the owner marker in their
    environment. Signals go through pidfds, so a pid reused meanwhile is not hit.
    """
    groups = {pgid for run in dead for pgid, start in run.groups if _same(pgid, start)}
    markers = frozenset().union(*(run.markers for run in dead))
    # A descendant of a dead owner started after it: older processes need no look.
    since = min((run.owner_start for run in dead), default=0)
    signalled: dict[tuple[int, int], int] = {}  # (pid, start) -> last signal
    deadline = time.monotonic() + grace_s
    while True:
        targets = _processes_of(groups, markers, since)
        if not targets:
            break
        now = time.monotonic()
        sig = signal.SIGKILL if now >= deadline else signal.SIGTERM
        for ident in targets:
            if signalled.get(ident) != sig:
                _pidfd_signal(*ident, sig)
                signalled[ident] = sig
        if now - deadline > 10:  # pragma: no cover - uninterruptible sleep (D state)
            break
        time.sleep(0.05)
    return len({pid for pid, _ in signalled})


def _end_marked(owner: bytes, run: bytes, since: int, grace_s: float) -> int:
    """TERM, grace, KILL the processes carrying both ``owner`` and ``run`` in their environment."""
    signalled: dict[tuple[int, int], int] = {}
    deadline = time.monotonic() + grace_s
    while True:
        targets = [
            ident
            for ident in _processes_of(set(), frozenset((owner,)), since)
            if _carries(ident[0], frozenset((run,)))
        ]
        if not targets:
            break
        now = time.monotonic()
        sig = signal.SIGKILL if now >= deadline else signal.SIGTERM
        for ident in targets:
            if signalled.get(ident) != sig:
                _pidfd_signal(*ident, sig)
                signalled[ident] = sig
        if now - deadline > 10:  # pragma: no cover - uninterruptible sleep (D state)
            break
        time.sleep(0.02)
    return len({pid for pid, _ in signalled})


def _same(pid: int, start: int) -> bool:
    """``pid`` is still the very process recorded (a start time of 0 proves nothing)."""
    return start > 0 and process_start(pid) == start


def _processes_of(
    groups: set[int], markers: frozenset[bytes], since: int = 0
) -> list[tuple[int, int]]:
    """(pid, start) of live, non-zombie processes in ``groups`` or carrying a marker."""
    me = os.getpid()
    found: list[tuple[int, int]] = []
    try:
        names = os.listdir("/proc")  # noqa: PTH208 - hot loop
    except OSError:  # pragma: no cover - not Linux
        return found
    for name in names:
        if not name.isdigit() or int(name) == me:
            continue
        fields = stat_fields(name)
        if fields is None or len(fields) < 20 or fields[0] in (b"Z", b"X"):
            continue
        pid, pgrp, start = int(name), int(fields[2]), int(fields[19])
        if pgrp in groups or (markers and start >= since and _carries(pid, markers)):
            found.append((pid, start))
    return found


def _carries(pid: int, markers: frozenset[bytes]) -> bool:
    try:
        with open(f"/proc/{pid}/environ", "rb") as fh:  # noqa: PTH123
            environ = fh.read()
    except OSError:
        return False
    return any(item in markers for item in environ.split(b"\0"))


def _pidfd_signal(pid: int, start: int, sig: int) -> None:
    """Signal ``pid`` only if it is still the process that started at ``start``."""
    try:
        fd = os.pidfd_open(pid)
    except OSError:
        return
    try:
        if process_start(pid) == start:
            signal.pidfd_send_signal(fd, sig)
    except OSError:
        pass
    finally:
        os.close(fd)


def _is_tmp(name: str) -> bool:
    return ".tmp" in name


def _tmp_files_in(run_dir: Path) -> list[Path]:
    """Every temp file of a run whose owner is gone (nobody can be writing them)."""
    removed: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(run_dir):
        dirnames[:] = [d for d in dirnames if not Path(dirpath, d).is_symlink()]
        for name in filenames:
            if _is_tmp(name):
                path = Path(dirpath, name)
                with contextlib.suppress(OSError):
                    path.unlink()
                    removed.append(path)
    return removed


def _boot_time() -> float:
    try:
        for line in Path("/proc/stat").read_text(encoding="ascii").splitlines():
            if line.startswith("btime "):
                return float(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0.0


def _writer_gone(path: Path, boot: float) -> bool:
    """The process a temp file names is gone, or the pid now belongs to a younger process."""
    match = _TMP_PID.search(path.name)
    try:
        mtime = path.lstat().st_mtime
    except OSError:
        return False
    if match is None:
        return time.time() - mtime > UNATTRIBUTED_AGE_S
    pid = int(match.group(1) or match.group(2))
    start = process_start(pid)
    if start is None:
        return True
    ticks = os.sysconf("SC_CLK_TCK")
    return boot > 0 and boot + start / ticks > mtime + 1


def _stale_tmp_files(state_dir: Path) -> list[Path]:
    """``*.tmp*`` left by atomic writes under ``.changeloop`` whose writer is gone."""
    places = [state_dir, state_dir / "cache", state_dir / "keys", state_dir / "decisions"]
    with contextlib.suppress(OSError):
        places += [p for p in (state_dir / "receipts").iterdir() if p.is_dir()]
    boot = _boot_time()
    removed: list[Path] = []
    for place in places:
        try:
            entries = list(place.iterdir())
        except OSError:
            continue
        for path in entries:
            if _is_tmp(path.name) and not path.is_dir() and _writer_gone(path, boot):
                with contextlib.suppress(OSError):
                    path.unlink()
                    removed.append(path)
    return removed


RECENT_RUNS = 20  # runs checked for temp files of writers that are gone
# Written last by a run, after its receipts' group commits are done (runlog.RUN_FILE):
# a run that has it left no temporary file, so its thousand directories need no walk.
RUN_RECORD = "run.json"


def _stale_tmp_in_recent_runs(runs: Path) -> list[Path]:
    """A run killed after its processes ended (sealing receipts) has no records: its
    temp files are found by their writer's pid, in the latest runs only."""
    try:
        recent = sorted((p for p in runs.iterdir() if p.is_dir()), reverse=True)
    except OSError:
        return []
    boot = _boot_time()
    removed: list[Path] = []
    for run_dir in recent[:RECENT_RUNS]:
        if (run_dir / RUN_RECORD).is_file():
            continue  # it ran to its end: every write of it was finished (and renamed) first
        for dirpath, dirnames, filenames in os.walk(run_dir):
            dirnames[:] = [d for d in dirnames if not Path(dirpath, d).is_symlink()]
            for name in filenames:
                path = Path(dirpath, name)
                if _is_tmp(name) and _TMP_PID.search(name) and _writer_gone(path, boot):
                    with contextlib.suppress(OSError):
                        path.unlink()
                        removed.append(path)
    return removed


def _stale_private_tempdirs() -> list[Path]:
    """Private temp dirs (``process_groups.private_tempdir``) of changeloop processes gone."""
    root = Path(system_tempdir())
    removed: list[Path] = []
    try:
        entries = list(root.iterdir())
    except OSError:
        return removed
    for path in entries:
        match = _PRIVATE_TMP.match(path.name)
        if match is not None:
            pid, start = int(match.group(1)), int(match.group(2))
            stale = pid < 2**31 and not is_alive(pid, start)
        elif path.name.startswith(_LEGACY_INDEX):
            stale = _age(path) > UNATTRIBUTED_AGE_S
        else:
            continue
        if stale and path.is_dir() and not path.is_symlink():
            _remove_tree(path)
            removed.append(path)
    return removed


def _remove_tree(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)

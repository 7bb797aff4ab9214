"""Ending a process group for good: TERM, a grace period, then KILL — now or after a crash.

A group is gone only when none of its members is alive (zombies excepted):
``killpg(pgid, 0)`` alone also succeeds for zombies nobody reaped.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio


def signal_group(pgid: int, sig: int) -> bool:
    """Send ``sig`` to the group; False when the group no longer exists."""
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        return False
    except PermissionError:  # pragma: no cover - a member changed uid; nothing we can do
        return True
    return True


def group_alive(pgid: int) -> bool:
    """True while a non-zombie process is in the group.

    ``killpg(pgid, 0)`` also succeeds for zombies nobody has reaped yet (a
    container's PID 1 may never reap), so on Linux we look in /proc.
    """
    if not signal_group(pgid, 0):
        return False
    try:
        entries = os.scandir("/proc")
    except OSError:  # pragma: no cover - not Linux
        return True
    with entries:
        for entry in entries:
            if not entry.name.isdigit():
                continue
            try:
                with open(f"/proc/{entry.name}/stat", "rb") as fh:  # noqa: PTH123 - hot loop
                    data = fh.read()
            except OSError:
                continue
            fields = data[data.rfind(b")") + 2 :].split()
            if len(fields) > 2 and int(fields[2]) == pgid and fields[0] not in (b"Z", b"X"):
                return True
    return False


async def end_group(pgid: int, grace_s: float) -> bool:
    """SIGTERM the group, wait up to ``grace_s`` for it to empty, then SIGKILL.

    Returns True when something was still there to signal. Polls with a short,
    growing interval so the common case (nothing left) costs one syscall.
    """
    if not signal_group(pgid, signal.SIGTERM):
        return False
    deadline = time.monotonic() + grace_s
    delay = 0.001
    killed_at: float | None = None
    while group_alive(pgid):
        now = time.monotonic()
        if now >= deadline:
            signal_group(pgid, signal.SIGKILL)  # again on each pass: members may fork
            killed_at = killed_at or now
            if now - killed_at > 10:  # pragma: no cover - uninterruptible sleep (D state)
                break
        await anyio.sleep(delay)
        delay = min(delay * 2, 0.05)
    return True


# -- what a run started, recorded so that a later run can end it ------------
#
# Layout (DESIGN.md §5 "Faults"; docs/processes.md):
#   .changeloop/runs/<run-id>/pgroups/owner.json    {"pid", "start"} of the changeloop process
#   .changeloop/runs/<run-id>/pgroups/<pgid>.json   {"pgid", "start", "owner", "ownerStart", "argv"}
# Each file is written atomically; a group's file is removed when the group
# ends normally, the directory when the run's processes are all done. What is
# left belongs to a run that was killed: :func:`sweep` ends it.

PGROUPS = "pgroups"
OWNER_FILE = "owner.json"
# Every process a run starts carries ``CHANGELOOP_OWNER=<pid>-<start>`` of its
# changeloop process, inherited by its descendants: it finds the members of a
# group whose leader is gone, and processes started in the instant between
# spawn and record.
OWNER_ENV = "CHANGELOOP_OWNER"


def process_start(pid: int) -> int | None:
    """Start time of ``pid`` in clock ticks since boot (/proc/<pid>/stat field 22); None if gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:  # noqa: PTH123 - hot path
            data = fh.read()
    except OSError:
        return None
    fields = data[data.rfind(b")") + 2 :].split()
    try:
        return int(fields[19])
    except (IndexError, ValueError):
        return None


_MARKERS: dict[int, str] = {}


def owner_marker(pid: int | None = None) -> str:
    """``<pid>-<start>``: one changeloop process, never confused with a later one of that pid."""
    pid = os.getpid() if pid is None else pid
    if pid not in _MARKERS:
        _MARKERS[pid] = f"{pid}-{process_start(pid) or 0}"
    return _MARKERS[pid]


def is_alive(pid: int, start: int) -> bool:
    """True while the process ``pid`` that started at ``start`` still runs (pid reuse safe)."""
    now = process_start(pid)
    return now is not None and start in (0, now)


def run_dir_of(log_dir: Path) -> Path | None:
    """The ``.changeloop/runs/<run-id>`` directory holding ``log_dir``, if it is in one."""
    text = "/" + str(log_dir)  # a relative path searched as if rooted
    at = text.rfind(_RUNS)  # the last occurrence is the deepest run directory
    if at < 0:
        return None
    run_id = text[at + len(_RUNS) :].split("/", 1)[0]
    if not run_id:
        return None
    prefix = text[1 : at + len(_RUNS) + len(run_id)]
    known = _RUN_DIRS.get(prefix)
    if known is None:
        if len(_RUN_DIRS) > 64:
            _RUN_DIRS.clear()
        known = _RUN_DIRS[prefix] = Path(prefix)
    return known


_RUNS = "/.changeloop/runs/"
_RUN_DIRS: dict[str, Path] = {}  # a run directory's text -> its Path (one per run)


def _write_json_atomic(path: Path, doc: dict[str, Any]) -> None:
    """Write, rename: never half a record. No fsync: the records guard against a
    killed process, and after a machine crash none of the processes exist."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "w", encoding="utf-8") as fh:  # noqa: PTH123
        json.dump(doc, fh)
    tmp.replace(path)


_CLAIMED: set[tuple[int, Path]] = set()  # (pid, run dir) whose owner record this process wrote


def claim_run(run_dir: Path) -> None:
    """Write the run's owner record (this process, its start time) if not there yet.

    ``pgroups/`` appears with ``owner.json`` already in it (made as
    ``.pgroups.<pid>.tmp`` and renamed), so a kill at any instant leaves either
    nothing, a staging directory that names its writer, or a complete record.
    Once per run directory and process: later calls cost nothing.
    """
    claim = (os.getpid(), run_dir)
    if claim in _CLAIMED:
        return
    directory = run_dir / PGROUPS
    if (directory / OWNER_FILE).is_file():
        _CLAIMED.add(claim)
        return
    pid = os.getpid()
    staging = run_dir / f".{PGROUPS}.{pid}.tmp"
    try:
        staging.mkdir(exist_ok=True)
        _write_json_atomic(staging / OWNER_FILE, {"pid": pid, "start": process_start(pid) or 0})
        try:
            staging.rename(directory)
        except OSError:  # pgroups/ is there already (a damaged one): complete it
            directory.mkdir(exist_ok=True)
            (staging / OWNER_FILE).replace(directory / OWNER_FILE)
            _remove_tree(staging)
    except OSError:  # pragma: no cover - an unwritable run dir fails the logs first
        return
    _CLAIMED.add(claim)


def record_group(run_dir: Path, pgid: int, argv: Sequence[str]) -> Path | None:
    """Record a just-started process group of the run; the path to forget it by.

    One exclusive create and one ``write`` (no temporary, no rename): a process
    killed at any instant leaves no record, an empty one or a whole one, since a
    single small write is never half done by a kill. An empty or unreadable
    record is skipped by the sweep, which still finds the group's processes by
    the owner marker in their environment (as for a kill between spawn and record).
    """
    claim_run(run_dir)
    me = os.getpid()
    record = {
        "pgid": pgid,
        "start": process_start(pgid) or 0,
        "owner": me,
        "ownerStart": int(owner_marker(me).rsplit("-", 1)[1]),
        "argv": [str(a) for a in list(argv)[:4]],
    }
    path = run_dir / PGROUPS / f"{pgid}.json"
    data = json.dumps(record).encode()
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:  # pragma: no cover - see claim_run
        return None
    try:
        os.write(fd, data)
    except OSError:  # pragma: no cover - a full disk: the marker still finds the group
        pass
    finally:
        os.close(fd)
    return path


def forget_group(path: Path | None) -> None:
    """The group ended normally: its record goes."""
    if path is not None:
        with contextlib.suppress(OSError):
            path.unlink()


def close_run(run_dir: Path) -> None:
    """Every process of the run is done: remove the records, unless a group is still listed."""
    directory = run_dir / PGROUPS
    try:
        names = [entry.name for entry in directory.iterdir()]
    except OSError:
        return
    if any(n != OWNER_FILE and n.endswith(".json") for n in names):
        return  # a group outlived its run's bookkeeping: leave it to the next sweep
    for name in names:
        with contextlib.suppress(OSError):
            (directory / name).unlink()
    with contextlib.suppress(OSError):
        directory.rmdir()


# -- the next prove ends what a killed run left --------------------------------
SWEEP_GRACE_S = 2.0
# Temp files of atomic writes name their writer: ``.<name>.<pid>[.<hex>].tmp``
# or ``.<name>.tmp<pid>``.
_TMP_PID = re.compile(r"\.(\d+)(?:\.[0-9a-f]+)?\.tmp$|\.tmp(\d+)$")
_PRIVATE_TMP = re.compile(r"^changeloop-(\d+)-(\d+)$")
_LEGACY_INDEX = "changeloop-index-"  # identity's temporary index made outside the CLI
UNATTRIBUTED_AGE_S = 3600.0  # a temp file naming no writer is left alone this long
_system_tmp: str | None = None  # the system temp dir, before the CLI made its own


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


def sweep(state_dir: Path, *, grace_s: float = SWEEP_GRACE_S) -> Sweep:
    """End the process groups of runs whose owner is gone, then remove their temp files.

    ``state_dir`` is the workspace's ``.changeloop``. A run counts as gone only
    when its owner's pid is absent or now belongs to a process that started at
    another time, so a live run — or a new process that reused a dead run's
    pid — is never touched. Then: leftover ``*.tmp*`` files of atomic writes
    whose writer is gone, private temp directories (identity's temporary
    indexes) of changeloop processes that are gone, and stale sandboxes.
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
        report.removed += _stale_tmp_in_recent_runs(state_dir / "runs")
        report.removed += _stale_private_tempdirs()
    from changeloop import sandboxes  # not at import: sandboxes import identity

    with contextlib.suppress(OSError):
        report.removed += sandboxes.cleanup_stale(state_dir / "sandboxes")
    return report


def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        doc = json.loads(path.read_bytes()[:65536])
    except (OSError, ValueError, RecursionError):
        return None
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
        try:
            with open(f"/proc/{name}/stat", "rb") as fh:  # noqa: PTH123
                data = fh.read()
        except OSError:
            continue
        fields = data[data.rfind(b")") + 2 :].split()
        if len(fields) < 20 or fields[0] in (b"Z", b"X"):
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
    places = [state_dir, state_dir / "cache", state_dir / "keys"]
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
    """Private temp dirs of changeloop processes that are gone (see :func:`private_tempdir`)."""
    root = Path(_system_tmp or tempfile.gettempdir())
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


@contextlib.contextmanager
def private_tempdir() -> Iterator[Path]:
    """This process's own temp directory, named ``changeloop-<pid>-<start>``, for its duration.

    ``tempfile`` writes there while it is active (identity's temporary indexes
    among others), so a changeloop killed with -9 leaves a directory that names
    its owner, and the next ``prove`` removes it once that owner is gone.
    """
    global _system_tmp
    previous = tempfile.tempdir
    system = _system_tmp or tempfile.gettempdir()
    path = Path(system) / f"changeloop-{owner_marker()}"
    try:
        path.mkdir(mode=0o700, exist_ok=True)
    except OSError:  # an unwritable temp dir: leave tempfile as it was
        yield Path(system)
        return
    _system_tmp, tempfile.tempdir = system, str(path)
    try:
        yield path
    finally:
        tempfile.tempdir = previous
        _remove_tree(path)

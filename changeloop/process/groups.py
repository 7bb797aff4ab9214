"""A run's process groups: ended for good now, and recorded so a later run can end them.

Ending: TERM, a grace period, then KILL. A group is gone only when none of its
members is alive (zombies excepted): ``killpg(pgid, 0)`` alone also succeeds
for zombies nobody reaped.

Recording: who owns a run (``owner.json``), each group it started
(``<pgid>.json``), the owner marker its processes inherit, and this process's
own temp directory. What a killed run left is ended by :mod:`changeloop.process.sweep`.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any


def stat_fields(pid: int | str) -> list[bytes] | None:
    """The fields of ``/proc/<pid>/stat`` after the command name (state first); None if gone.

    The name may hold spaces and parentheses, so the fields start after the last ``)``.
    """
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:  # noqa: PTH123 - hot loop
            data = fh.read()
    except OSError:
        return None
    return data[data.rfind(b")") + 2 :].split()


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
            fields = stat_fields(entry.name)
            if fields is None:
                continue
            if len(fields) > 2 and int(fields[2]) == pgid and fields[0] not in (b"Z", b"X"):
                return True
    return False


async def end_group(pgid: int, grace_s: float) -> bool:
    """SIGTERM the group, wait up to ``grace_s`` for it to empty, then SIGKILL.

    Returns True when something was still there to signal. Polls with a short,
    growing interval so the common case (nothing left) costs one syscall.
    """
    import anyio  # noqa: PLC0415 - every verb imports this module; few end a group

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
# Layout (docs/processes.md):
#   .changeloop/runs/<run-id>/pgroups/owner.json    {"pid", "start"} of the changeloop process
#   .changeloop/runs/<run-id>/pgroups/<pgid>.json   {"pgid", "start", "owner", "ownerStart", "argv"}
# Each file is written atomically; a group's file is removed when the group
# ends normally, the directory when the run's processes are all done. What is
# left belongs to a run that was killed: :func:`changeloop.process.sweep.sweep` ends it.

PGROUPS = "pgroups"
OWNER_FILE = "owner.json"
# Every process a run starts carries ``CHANGELOOP_OWNER=<pid>-<start>`` of its
# changeloop process, inherited by its descendants: it finds the members of a
# group whose leader is gone, and processes started in the instant between
# spawn and record.
OWNER_ENV = "CHANGELOOP_OWNER"
# ... and ``CHANGELOOP_RUN=<run-id>``: what the run ends at its end, a daemon of its
# providers that left the group with ``setsid`` included.
RUN_ENV = "CHANGELOOP_RUN"


def process_start(pid: int) -> int | None:
    """Start time of ``pid`` in clock ticks since boot (/proc/<pid>/stat field 22); None if gone."""
    fields = stat_fields(pid)
    if fields is None:
        return None
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


def _remove_tree(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)


_system_tmp: str | None = None  # the system temp dir, before the CLI made its own


def system_tempdir() -> str:
    """The system's temp directory, even while :func:`private_tempdir` stands in for it."""
    return _system_tmp or tempfile.gettempdir()


@contextlib.contextmanager
def private_tempdir() -> Iterator[Path]:
    """This process's own temp directory, named ``changeloop-<pid>-<start>``, for its duration.

    ``tempfile`` writes there while it is active (identity's temporary indexes
    among others), so a changeloop killed with -9 leaves a directory that names
    its owner, and the next ``prove`` removes it once that owner is gone.
    """
    global _system_tmp
    previous = tempfile.tempdir
    system = system_tempdir()
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

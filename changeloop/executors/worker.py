"""What runs on a Dask worker: one ``Job`` → a ``WireResult`` (DESIGN.md §10).

Only plain functions and frozen records travel: the coordinator submits
:func:`run_job` with a :class:`WireJob`; the worker materializes a private
sandbox for the run and repository from its content cache (keyed by tree
id), checks its tree, runs the repository's ``setup`` once, reads ``envFrom``
values from its *own* environment (secrets never cross the wire), runs the
command as a process group (``changeloop.processes``) and sends back the
process record, its log files and the files the command wrote in the sandbox.
Paths the coordinator put in the command (its sandbox, its log directory) are
re-pointed at the worker's own. A cancelled job (:func:`cancel`) ends its
process group.
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import subprocess
import tarfile
import tempfile
import threading
import time
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

import anyio

from changeloop.executors.content import tree_of, unpack
from changeloop.model import Plan, Service
from changeloop.processes import ProcessResult, run_process
from changeloop.providers.base import Finding
from changeloop.run.job import Job, _fresh_report

MAX_OUTPUT_BYTES = 64 * 1024 * 1024  # files a command wrote, sent back at most
SETUP_TIMEOUT_MS = 30 * 60 * 1000
SKIP_DIRS = frozenset({".git", "__pycache__"})

Failure = tuple[str, str, str]  # (status, finding kind, message)

Baseline = Mapping[str, tuple[int, int]]  # relative path -> (mtime_ns, size) after setup


@dataclass
class _Box:
    """One run's sandbox of one repository on this worker (written under its lock only)."""

    tree: str
    path: Path
    failure: Failure | None  # content-mismatch, or its setup failed here
    baseline: Baseline  # what the sandbox held before any job: never a job's output
    steps: int = 0  # setup commands done here


_guard = threading.Lock()
_locks: dict[str, threading.Lock] = {}
_sandboxes: dict[str, _Box] = {}
_cancelled: set[str] = set()
_closed: set[str] = set()  # sessions whose coordinator has closed: no sandbox is made for them


@dataclass(frozen=True)
class WireRepo:
    """A repository the job needs on this worker: its content tree and its setup."""

    name: str
    tree: str
    setup: tuple[tuple[str, ...], ...] = ()


@dataclass(frozen=True)
class WireJob:
    job: Job
    session: str  # one per coordinator run: the worker's sandboxes are the run's
    token: str  # one per submission: cancellation and the job's own directory
    setup: tuple[tuple[str, ...], ...]  # the job's repository's setup commands
    contents: Mapping[str, bytes] = field(default_factory=dict)  # tree -> archive, once a worker
    services: tuple[Service, ...] = ()  # started on this worker for this job, then stopped
    # the other repositories its services live in (DESIGN §10: content by tree id, like any)
    service_repos: tuple[WireRepo, ...] = ()
    # this job is setup command number ``setup_step`` of its repository (the coordinator's
    # run_setup): it runs in the sandbox before the setup is complete, and sends back no outputs
    setup_step: int | None = None

    def own(self) -> WireRepo:
        return WireRepo(self.job.sandbox.repository, self.job.sandbox.tree, self.setup)


@dataclass(frozen=True)
class WireResult:
    worker: str
    need: tuple[str, ...] = ()  # content trees this worker lacks: ship them and submit again
    failure: Failure | None = None
    exit_code: int | None = None
    timed_out: bool = False
    spawn_error: str | None = None
    duration_ms: int = 0
    log_sha256: str = ""
    stdout_tail: str = ""
    stderr_tail: str = ""
    log_tail: str = ""
    signal: int | None = None
    leftovers: bool = False
    log_name: str = ""  # the log's path relative to the job directory
    stdout_name: str = ""
    logs: bytes = b""  # tar of the job directory
    outputs: bytes = b""  # tar of the files the command wrote in the sandbox
    started: datetime | None = None
    finished: datetime | None = None


def _worker() -> Any:
    from distributed import get_worker

    return get_worker()


def base_dir(dask_worker: Any = None) -> Path:
    """This worker's own directory for changeloop (content cache and sandboxes)."""
    try:
        worker = dask_worker or _worker()
        return Path(worker.local_directory) / "changeloop"
    except ValueError:  # not inside a worker (direct call)
        return Path(tempfile.gettempdir()) / f"changeloop-worker-{os.getpid()}"


def content_dir(tree: str, dask_worker: Any = None) -> str:
    """Where this worker caches the content of ``tree`` (for operators and tests)."""
    return str(base_dir(dask_worker) / "trees" / tree)


def cancel(token: str) -> None:
    """Ask the job ``token`` to stop: its runner ends the process group."""
    _cancelled.add(token)


def cleanup(session: str, dask_worker: Any = None) -> None:
    """Remove a finished run's sandboxes (the content cache stays).

    A prepare still making one finishes first (its lock); none is made after.
    """
    with _guard:
        _closed.add(session)
        keys = [k for k in _locks if k.startswith(session + "/")]
    for key in keys:
        with _lock(key):
            _sandboxes.pop(key, None)
    with _guard:
        for key in keys:
            _locks.pop(key, None)
    shutil.rmtree(base_dir(dask_worker) / "runs" / session, ignore_errors=True)


def executable_identity(argv0: str) -> str:
    """The environment part of ``argv0`` on this worker (``changeloop.environment.part``).

    The sha256 of the resolved executable's bytes, a shebang's interpreter, a
    Python's version and installed distributions — as canonical JSON, so the
    coordinator compares workers' answers byte for byte.
    """
    from changeloop.environment import part
    from changeloop.jcs import canonicalize

    return canonicalize(part([argv0], Path(tempfile.gettempdir()), None)).decode()


def executable_identities(argv0s: Sequence[str]) -> dict[str, str]:
    """:func:`executable_identity` of each of ``argv0s``: one round trip for a whole plan."""
    return {argv0: executable_identity(argv0) for argv0 in argv0s}


def prepare(session: str, repo: WireRepo, archive: bytes | None) -> str | None:
    """Make this run's sandbox of ``repo`` ahead of its first job (setup is left to the jobs).

    The coordinator asks every worker as soon as it connects, so that the first
    job on each worker does not pay for unpacking, copying and the tree check.
    Returns the failure's message, or None.
    """
    contents = {repo.tree: archive} if archive is not None else {}
    place = _Place(session, "prepare", contents, base_dir(), str(_worker().address), ())
    try:
        box = _sandbox(place, repo, steps=0)
    except (OSError, subprocess.CalledProcessError, tarfile.TarError) as exc:
        return f"{type(exc).__name__}: {exc}"
    if box is None:
        return f"no content for tree {repo.tree}"
    return box.failure[2] if box.failure else None


def run_job(wire: WireJob) -> WireResult:
    """Run one job on this worker; never raises for the job's own failures."""
    job = wire.job
    address = str(_worker().address)
    missing = [name for name in job.env_from if name not in os.environ]
    if missing:
        why = f"envFrom variable {missing[0]} is not set on worker {address}"
        return WireResult(address, failure=("fail", "secret-missing", why))
    base = base_dir()
    place = _Place(wire.session, wire.token, wire.contents, base, address, job.secrets(os.environ))
    repos = (wire.own(), *wire.service_repos)
    need = tuple(r.tree for r in repos if not _available(wire, r, base))
    if need:
        return WireResult(address, need=need)
    boxes: dict[str, _Box] = {}
    try:
        for repo in repos:
            # a setup job runs the commands before its own; every other job all of them
            steps = wire.setup_step if repo.name == job.sandbox.repository else None
            box = _sandbox(place, repo, steps=steps)
            if box is None:  # its cache was removed meanwhile, or the run has closed: ask again
                return WireResult(address, need=(repo.tree,))
            if box.failure is not None:
                return WireResult(address, failure=box.failure)
            boxes[repo.name] = box
    except (OSError, subprocess.CalledProcessError, tarfile.TarError) as exc:
        why = f"worker {address} could not materialize the sandbox: {type(exc).__name__}: {exc}"
        return WireResult(address, failure=("inconclusive", "sandbox-failed", why))
    own = boxes[job.sandbox.repository]
    sandbox, baseline = own.path, own.baseline
    jobdir = base / "runs" / wire.session / "jobs" / wire.token
    jobdir.mkdir(parents=True, exist_ok=True)
    swaps = ((job.sandbox.path, str(sandbox)), (job.log_dir, str(jobdir)))
    argv = [_swap(a, swaps) for a in job.argv]
    env = {k: _swap(v, swaps) for k, v in job.environment(os.environ).items()}
    _fresh_report(replace(job, sandbox=replace(job.sandbox, path=str(sandbox))))
    started, clock = datetime.now(UTC), time.time()
    workdirs = {name: box.path for name, box in boxes.items()}
    result = anyio.run(_cancellable, wire, argv, workdirs, env, jobdir)
    finished = datetime.now(UTC)
    _cancelled.discard(wire.token)
    logs = {f"{job.log_name}.log", f"{job.log_name}.stdout"}
    if isinstance(result, ProcessResult):
        logs |= {_relative(result.log_path, jobdir), _relative(result.stdout_path, jobdir)}
    _repoint_back(job, sandbox, jobdir, swaps, keep=logs)
    if result is None:
        why = f"cancelled on worker {address}; its process group was ended"
        return WireResult(address, failure=("inconclusive", "cancelled", why))
    if isinstance(result, list):  # its services did not come up: what a local run says
        why = "; ".join(f.message for f in result)
        return WireResult(address, failure=("fail", result[0].kind, why))
    if wire.setup_step is not None:  # what setup leaves is the sandbox's, never a job's output
        _setup_done(wire, own, ok=result.exit_code == 0 and not result.timed_out)
    return WireResult(
        address,
        exit_code=result.exit_code,
        timed_out=result.timed_out,
        spawn_error=result.spawn_error,
        duration_ms=result.duration_ms,
        log_sha256=result.log_sha256,
        stdout_tail=result.stdout_tail,
        stderr_tail=result.stderr_tail,
        log_tail=result.log_tail,
        signal=result.signal,
        leftovers=result.leftovers,
        log_name=_relative(result.log_path, jobdir),
        stdout_name=_relative(result.stdout_path, jobdir),
        logs=_pack_dir(jobdir, 0.0),
        outputs=b"" if wire.setup_step is not None else _pack_dir(sandbox, clock - 1.0, baseline),
        started=started,
        finished=finished,
    )


def _available(wire: WireJob, repo: WireRepo, base: Path) -> bool:
    """Whether this worker has ``repo``'s content: made for this run, cached, or sent along."""
    box = _sandboxes.get(f"{wire.session}/{repo.name}")
    if box is not None and box.tree == repo.tree:
        return True
    return repo.tree in wire.contents or (base / "trees" / repo.tree).is_dir()


def _setup_done(wire: WireJob, box: _Box, *, ok: bool) -> None:
    """A setup job finished: count its step, and take what the sandbox holds now as baseline."""
    with _lock(f"{wire.session}/{wire.job.sandbox.repository}"):
        if ok and box.steps == wire.setup_step:
            box.steps += 1
            box.baseline = _snapshot(box.path)


async def _cancellable(
    wire: WireJob, argv: list[str], workdirs: Mapping[str, Path], env: dict[str, str], jobdir: Path
) -> ProcessResult | list[Finding] | None:
    """The job's process (with its services up); problems of its services; None: cancelled."""
    token, job = wire.token, wire.job
    done: list[ProcessResult | list[Finding]] = []
    async with anyio.create_task_group() as tg:

        async def watch() -> None:
            while token not in _cancelled:
                await anyio.sleep(0.1)
            tg.cancel_scope.cancel()

        tg.start_soon(watch)
        cwd = workdirs[job.sandbox.repository]
        async with _services(wire, workdirs, jobdir) as problems:
            if problems:
                done.append(problems)
            else:
                done.append(
                    await run_process(
                        argv,
                        cwd=cwd,
                        env=env,
                        timeout_ms=job.timeout_ms,
                        log_dir=jobdir,
                        log_name=job.log_name,
                        secrets=job.secrets(os.environ),
                    )
                )
        tg.cancel_scope.cancel()
    return done[0] if done else None


@asynccontextmanager
async def _services(
    wire: WireJob, workdirs: Mapping[str, Path], jobdir: Path
) -> AsyncIterator[list[Finding]]:
    """The job's services, started here with identity-checked readiness (changeloop.services).

    Each starts in its repository's sandbox on this worker, as a local run starts
    it in that repository's sandbox on the coordinator.
    """
    if not wire.services:
        yield []
        return
    from changeloop.services import ServiceManager

    sandbox = workdirs[wire.job.sandbox.repository]
    swaps = ((wire.job.sandbox.path, str(sandbox)),)
    services = {
        s.name: replace(s, command=tuple(_swap(a, swaps) for a in s.command)) for s in wire.services
    }
    plan = cast(Plan, _ServicePlan(services, sandbox))
    manager = ServiceManager(
        plan,
        workdirs=dict(workdirs),
        env=dict(os.environ),
        log_dir=jobdir / "services",
        users={name: 1 for name in services},
        secrets=wire.job.secrets(os.environ),
    )
    async with manager, manager.lease(tuple(services)) as problems:
        yield problems


@dataclass(frozen=True)
class _ServicePlan:
    """What ``ServiceManager`` reads of a plan: the services, and a root."""

    services: Mapping[str, Service]
    root: Path


def _lock(key: str) -> threading.Lock:
    with _guard:
        return _locks.setdefault(key, threading.Lock())


@dataclass(frozen=True)
class _Place:
    """Where and for whom a sandbox is made: the run, the submission, this worker."""

    session: str
    token: str
    contents: Mapping[str, bytes]
    base: Path
    address: str
    secrets: tuple[str, ...]  # masked in setup logs


def _sandbox(place: _Place, repo: WireRepo, *, steps: int | None) -> _Box | None:
    """This run's sandbox of ``repo``: made and checked once, set up to ``steps`` commands.

    ``steps`` None: all of its setup (a job's own repository, a service's). None
    is returned when this worker lacks the content (or the run has closed).
    """
    key = f"{place.session}/{repo.name}"
    with _lock(key):
        if place.session in _closed:
            return None
        box = _sandboxes.get(key)
        if box is None or box.tree != repo.tree:
            made = _materialize(place, repo)
            if made is None:
                return None
            box = _sandboxes[key] = made
        todo = len(repo.setup) if steps is None else min(steps, len(repo.setup))
        if box.failure is None and box.steps < todo:
            box.failure = _setup(place, repo, box, todo)
            # what setup left is the sandbox's, not any job's output: never sent back
            box.baseline = _snapshot(box.path)
        return box


def _materialize(place: _Place, repo: WireRepo) -> _Box | None:
    cached = place.base / "trees" / repo.tree
    if not cached.is_dir():
        content = place.contents.get(repo.tree)
        if content is None:
            return None
        staging = place.base / "trees" / f".{repo.tree}.{place.token}.{threading.get_ident()}"
        unpack(content, staging)
        try:
            staging.rename(cached)
        except OSError:  # another job unpacked it first
            shutil.rmtree(staging, ignore_errors=True)
    path = place.base / "runs" / place.session / "repos" / repo.name
    shutil.rmtree(path, ignore_errors=True)
    shutil.copytree(cached, path, symlinks=True)
    tree = tree_of(path, place.base / "hash.git")
    failure: Failure | None = None
    if tree != repo.tree:
        why = (
            f"worker {place.address} materialized tree {tree} for repository "
            f"{repo.name}, not the job's {repo.tree}"
        )
        failure = ("fail", "content-mismatch", why)
    return _Box(repo.tree, path, failure, _snapshot(path))


def _setup(place: _Place, repo: WireRepo, box: _Box, todo: int) -> Failure | None:
    """Run setup commands ``box.steps`` up to ``todo`` here; the first failure is the answer."""
    logs = place.base / "runs" / place.session / "setup" / repo.name
    while box.steps < todo:
        argv = repo.setup[box.steps]
        name = f"setup-{box.steps}"
        result = anyio.run(_plain, list(argv), box.path, logs, name, place.secrets)
        if result.exit_code != 0:
            why = result.spawn_error or f"exited {result.exit_code}"
            message = f"setup {' '.join(argv)} on worker {place.address}: {why}"
            return ("inconclusive", "setup-failed", message)
        box.steps += 1
    return None


async def _plain(
    argv: list[str], cwd: Path, logs: Path, name: str, secrets: tuple[str, ...]
) -> ProcessResult:
    logs.mkdir(parents=True, exist_ok=True)
    return await run_process(
        argv,
        cwd=cwd,
        env=dict(os.environ),
        timeout_ms=SETUP_TIMEOUT_MS,
        log_dir=logs,
        log_name=name,
        secrets=secrets,
    )


def _repoint_back(
    job: Job, sandbox: Path, jobdir: Path, swaps: Sequence[tuple[str, str]], keep: set[str]
) -> None:
    """Paths of this worker in the report and the job's records become the coordinator's.

    Adapters compare recorded paths (where a module was imported from, which
    file a test traced, a report's file names) with the coordinator's sandbox.
    Every file the job left in its directory is re-pointed except the logs in
    ``keep``, which stay as written (their digest is of the bytes the command wrote).
    """
    back = sorted(
        ((new.encode(), old.encode()) for old, new in swaps if old),
        key=lambda pair: len(pair[0]),
        reverse=True,
    )
    files = [sandbox / job.report] if job.report else []
    files.extend(
        path for path, _ in _walk(jobdir) if path.relative_to(jobdir).as_posix() not in keep
    )
    # ``job.collect`` names directories under the job's log directory (``jobdir`` here):
    # the walk above has them already.
    for path in files:
        with contextlib.suppress(OSError):
            if path.is_symlink() or not path.is_file():
                continue
            data = original = path.read_bytes()
            for worker_path, coordinator_path in back:
                data = data.replace(worker_path, coordinator_path)
            if data != original:
                path.write_bytes(data)


def _swap(text: str, swaps: Sequence[tuple[str, str]]) -> str:
    """Re-point coordinator paths; the longest first (the log directory may lie in the checkout)."""
    for old, new in sorted(swaps, key=lambda pair: len(pair[0]), reverse=True):
        if old and old in text:
            text = text.replace(old, new)
    return text


def _relative(path: Path, root: Path) -> str:
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return path.name


def _walk(root: Path) -> Iterator[tuple[Path, os.stat_result]]:
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS)
        for name in sorted(files):
            path = Path(folder) / name
            with contextlib.suppress(OSError):
                yield path, path.lstat()


def _snapshot(root: Path) -> dict[str, tuple[int, int]]:
    return {
        path.relative_to(root).as_posix(): (stat.st_mtime_ns, stat.st_size)
        for path, stat in _walk(root)
    }


def _pack_dir(root: Path, since: float, baseline: Baseline | None = None) -> bytes:
    """Files under ``root`` written at or after ``since`` and not as ``baseline`` had them.

    Bounded to MAX_OUTPUT_BYTES; an uncompressed tar archive, or b"" for none.
    """
    buffer = io.BytesIO()
    budget = MAX_OUTPUT_BYTES
    added = False
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        for path, stat in _walk(root):
            name = path.relative_to(root).as_posix()
            if stat.st_mtime < since or stat.st_size > budget:
                continue
            if baseline is not None and baseline.get(name) == (stat.st_mtime_ns, stat.st_size):
                continue
            budget -= stat.st_size
            archive.add(path, arcname=name, recursive=False)
            added = True
    # nothing written: nothing to send (an empty tar is 10 KiB, and slow to recognise)
    return buffer.getvalue() if added else b""

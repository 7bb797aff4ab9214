"""What runs on a Dask worker: one ``Job`` → a ``WireResult``.

Only plain functions and frozen records travel: the coordinator submits
:func:`run_job` with a :class:`WireJob`; the worker materializes a private
sandbox for the run and repository from its content cache (keyed by tree
id), checks its tree, runs the repository's ``setup`` once, reads ``envFrom``
values from its *own* environment (secrets never cross the wire), runs the
command as a process group (``changeloop.process.run``, recorded so that a
replacement worker can end it: ``worker_processes.py``) and sends back the
process record, its log and stdout, its collected records and its declared
report — nothing else it wrote. Paths the coordinator put in the command and
in the files shipped with it (its sandbox, its log directory) are re-pointed
at the worker's own. A cancelled job (:func:`cancel`) ends its process group.

This module holds what the coordinator submits; its parts are ``wire.py`` (the
records that travel), ``worker_sandboxes.py`` (a run's sandboxes on this
worker), ``worker_files.py`` (paths re-pointed, the declared files packed) and
``worker_processes.py`` (job processes recorded, a dead worker's swept).
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import tarfile
import tempfile
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

import anyio
from distributed import get_worker

from changeloop.executors.local import fresh_report
from changeloop.executors.wire import WireJob, WireRepo, WireResult
from changeloop.executors.worker_files import pack_named, relative, repoint_back, swap, write_inputs
from changeloop.executors.worker_processes import close_session as close_processes
from changeloop.executors.worker_processes import run_dir, sweep_once
from changeloop.executors.worker_sandboxes import (
    Box,
    Place,
    available,
    close_session,
    sandbox_of,
    setup_done,
)
from changeloop.fingerprints.environment import part
from changeloop.model import Plan, Service
from changeloop.outcome import Finding
from changeloop.passenv import strict_environ
from changeloop.process.run import ProcessResult, run_process
from changeloop.signing.jcs import canonicalize

_cancelled: set[str] = set()


def _worker() -> Any:
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


async def cleanup(session: str, dask_worker: Any = None) -> None:
    """Remove a finished run's sandboxes (the content cache stays), off the worker's loop.

    A coroutine because the coordinator does not wait for it, and Dask runs only a
    coroutine so (a plain function sent without waiting is refused on the worker).
    A prepare still making a sandbox finishes first (its lock); none is made after.
    """
    await asyncio.to_thread(_cleanup, session, dask_worker)


def _cleanup(session: str, dask_worker: Any) -> None:
    close_session(session)
    shutil.rmtree(base_dir(dask_worker) / "runs" / session, ignore_errors=True)
    close_processes(session, dask_worker)


def executable_identity(argv0: str) -> str:
    """The environment part of ``argv0`` on this worker (``fingerprints.environment.part``).

    The sha256 of the resolved executable's bytes, a shebang's interpreter, a
    Python's version and installed distributions — as canonical JSON, so the
    coordinator compares workers' answers byte for byte.
    """
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
    sweep_once()
    contents = {repo.tree: archive} if archive is not None else {}
    logs = run_dir(session) / "setup"
    place = Place(session, "prepare", contents, base_dir(), str(_worker().address), (), logs)
    try:
        box = sandbox_of(place, repo, steps=0)
    except (OSError, subprocess.CalledProcessError, tarfile.TarError) as exc:
        return f"{type(exc).__name__}: {exc}"
    if box is None:
        return f"no content for tree {repo.tree}"
    return box.failure[2] if box.failure else None


def run_job(wire: WireJob) -> WireResult:
    """Run one job on this worker; never raises for the job's own failures."""
    sweep_once()  # what a killed worker of this machine left is ended before this job starts
    job = wire.job
    address = str(_worker().address)
    missing = [name for name in job.env_from if name not in os.environ]
    if missing:
        why = f"envFrom variable {missing[0]} is not set on worker {address}"
        return WireResult(address, failure=("fail", "secret-missing", why))
    base = base_dir()
    records = run_dir(wire.session)  # recorded process groups: a replacement worker ends them
    secrets = job.secrets(os.environ)
    place = Place(
        wire.session, wire.token, wire.contents, base, address, secrets, records / "setup"
    )
    repos = (wire.own(), *wire.service_repos)
    need = tuple(r.tree for r in repos if not available(wire, r, base))
    if need:
        return WireResult(address, need=need)
    boxes: dict[str, Box] = {}
    try:
        for repo in repos:
            # a setup job runs the commands before its own; every other job all of them
            steps = wire.setup_step if repo.name == job.sandbox.repository else None
            box = sandbox_of(place, repo, steps=steps)
            if box is None:  # its cache was removed meanwhile, or the run has closed: ask again
                return WireResult(address, need=(repo.tree,))
            if box.failure is not None:
                return WireResult(address, failure=box.failure)
            boxes[repo.name] = box
    except (OSError, subprocess.CalledProcessError, tarfile.TarError) as exc:
        why = f"worker {address} could not materialize the sandbox: {type(exc).__name__}: {exc}"
        return WireResult(address, failure=("inconclusive", "sandbox-failed", why))
    own = boxes[job.sandbox.repository]
    sandbox = own.path
    jobdir = records / "jobs" / wire.token
    jobdir.mkdir(parents=True, exist_ok=True)
    aliases = (job.sandbox.path, *wire.sandbox_aliases)
    swaps = ((job.log_dir, str(jobdir)), *((alias, str(sandbox)) for alias in aliases))
    try:
        return _run_in(wire, address, boxes, jobdir, swaps)
    finally:
        shutil.rmtree(jobdir, ignore_errors=True)  # its files are in the answer


def _run_in(
    wire: WireJob,
    address: str,
    boxes: Mapping[str, Box],
    jobdir: Path,
    swaps: Sequence[tuple[str, str]],
) -> WireResult:
    """Run the job in ``jobdir`` with its sandboxes ready; pack what goes back."""
    job = wire.job
    own = boxes[job.sandbox.repository]
    sandbox = own.path
    write_inputs(jobdir, job.inputs, swaps)  # e.g. the grounding tracer's configuration
    argv = [swap(a, swaps) for a in job.argv]
    # the worker's own environment is filtered as a local run's is: only what the wiring binds
    passed = strict_environ(os.environ, job.provider.pass_env, job.env_from)
    env = {k: swap(v, swaps) for k, v in job.environment(passed).items()}
    fresh_report(replace(job, sandbox=replace(job.sandbox, path=str(sandbox))))
    started = datetime.now(UTC)
    workdirs = {name: box.path for name, box in boxes.items()}
    result = anyio.run(_cancellable, wire, argv, workdirs, env, jobdir)
    finished = datetime.now(UTC)
    _cancelled.discard(wire.token)
    logs = {f"{job.log_name}.log", f"{job.log_name}.stdout"}
    if isinstance(result, ProcessResult):
        logs.add(relative(result.log_path, jobdir))
        if result.stdout_path is not None:
            logs.add(relative(result.stdout_path, jobdir))
    repoint_back(job, sandbox, jobdir, swaps, keep=logs)
    if result is None:
        why = f"cancelled on worker {address}; its process group was ended"
        return WireResult(address, failure=("inconclusive", "cancelled", why))
    if isinstance(result, list):  # its services did not come up: what a local run says
        why = "; ".join(f.message for f in result)
        return WireResult(address, failure=("fail", result[0].kind, why))
    if wire.setup_step is not None:  # what setup leaves is the sandbox's, never a job's output
        setup_done(wire, own, ok=result.exit_code == 0 and not result.timed_out)
    log_name = relative(result.log_path, jobdir)
    stdout_name = relative(result.stdout_path, jobdir) if result.stdout_path else ""
    # only what the coordinator reads goes back: the logs, the collected records, the report
    report = [job.report] if job.report and wire.setup_step is None else []
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
        log_name=log_name,
        stdout_name=stdout_name,
        logs=pack_named(jobdir, [log_name, stdout_name], job.collect),
        outputs=pack_named(sandbox, report, ()),
        started=started,
        finished=finished,
    )


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
        cwd = workdirs[job.sandbox.repository] / job.workdir
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
                        keep_stdout=job.output,
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
    from changeloop.services import ServiceManager  # noqa: PLC0415 - only a job with services needs the service manager

    sandbox = workdirs[wire.job.sandbox.repository]
    swaps = ((wire.job.sandbox.path, str(sandbox)),)
    services = {
        s.name: replace(s, command=tuple(swap(a, swaps) for a in s.command)) for s in wire.services
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

"""Executors: who runs a provider's ``Job`` (DESIGN.md §9, §10).

``local`` (this machine, ``changeloop.executors.job.LocalExecutor``) is the default;
``dask`` runs jobs on a Dask cluster and needs ``pip install 'changeloop[dask]'``.
Nothing from Dask is imported unless ``--executor dask`` asks for it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from changeloop.errors import ChangeloopError, Problem
from changeloop.executors.job import Executor
from changeloop.executors.local import LocalExecutor
from changeloop.model import Plan
from changeloop.records import ProveOptions

SCHEDULER_ENV = "CHANGELOOP_DASK_SCHEDULER"


@asynccontextmanager
async def open_executor(
    plan: Plan, options: ProveOptions, state_dir: Path
) -> AsyncIterator[Executor]:
    """The run's executor, connected and checked before anything runs (else exit 2)."""
    if options.executor == "local":
        yield LocalExecutor()
        return
    try:
        from changeloop.executors.dask import DaskExecutor
    except ImportError as exc:
        raise ChangeloopError(
            Problem(
                code="dask_missing",
                message=f"--executor dask needs the Dask extra, which is not installed ({exc})",
                fix="pip install 'changeloop[dask]'",
            )
        ) from exc
    if not options.dask_scheduler:
        raise ChangeloopError(
            Problem(
                code="dask_scheduler_missing",
                message="--executor dask needs the address of a Dask scheduler",
                fix=f"pass --dask-scheduler tcp://host:8786 or set {SCHEDULER_ENV}",
            )
        )
    cap = options.jobs if options.jobs_given else None
    executor = DaskExecutor(plan, options.dask_scheduler, options.sandbox, state_dir, cap=cap)
    await executor.identify()  # a repository that cannot be shipped refuses before connecting
    await executor.connect()
    try:
        await executor.check_environment()
        await executor.prewarm()
        yield executor
    finally:
        await executor.close()

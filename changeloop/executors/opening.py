"""The run's executor, chosen, checked and connected before anything runs.

``local`` (this machine) is the default; ``dask`` is refused before anything is
contacted unless the extra is installed, a scheduler is named and the cluster is
reached over TLS with a client certificate (:mod:`~changeloop.executors.tls`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from changeloop.errors import ChangeloopError, Problem
from changeloop.executors.job import Executor
from changeloop.executors.local import LocalExecutor
from changeloop.model import Plan
from changeloop.passenv import Snapshot
from changeloop.records import ProveOptions

SCHEDULER_ENV = "CHANGELOOP_DASK_SCHEDULER"


def check_dask(options: ProveOptions) -> None:
    """Refuse a Dask run that cannot or must not start (exit 2); nothing is contacted.

    In order: the extra is installed, a scheduler is named, and the cluster is
    reached over TLS with a client certificate (or ``--dask-insecure``).
    """
    if options.executor != "dask":
        return
    try:
        from changeloop.executors.tls import tls_problem  # noqa: PLC0415 - only the Dask path imports dask
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
                fix=f"pass --dask-scheduler tls://host:8786 or set {SCHEDULER_ENV}",
            )
        )
    problem = tls_problem(options)
    if problem is not None:
        raise ChangeloopError(problem)


def insecure_note(options: ProveOptions) -> str | None:
    """What ``--dask-insecure`` gives up, for stderr, when the address is not ``tls://``."""
    address = options.dask_scheduler or ""
    if options.executor != "dask" or not options.dask_insecure or address.startswith("tls://"):
        return None
    return (
        f"note: --dask-insecure: the Dask cluster at {address} is reached without TLS; anyone "
        "who can reach it can run code on its workers and decide this run's results"
    )


@asynccontextmanager
async def open_executor(
    plan: Plan, options: ProveOptions, state_dir: Path, environ: Snapshot | None = None
) -> AsyncIterator[Executor]:
    """The run's executor, connected and checked before anything runs (else exit 2).

    ``environ``: the run's snapshot of the environment, which local jobs start from (a
    Dask worker reads its own machine's).

    A Dask executor that lost its scheduler during the run raises
    ``dask_scheduler_lost`` as the run ends (see ``DaskExecutor.lost``).
    """
    if options.executor == "local":
        yield LocalExecutor(environ)
        return
    check_dask(options)
    from changeloop.executors.dask import DaskExecutor  # noqa: PLC0415 - only the Dask path imports distributed
    from changeloop.executors.tls import security_of  # noqa: PLC0415 - only the Dask path imports dask

    assert options.dask_scheduler is not None  # check_dask
    cap = options.jobs if options.jobs_given else None
    executor = DaskExecutor(
        plan,
        options.dask_scheduler,
        options.sandbox,
        state_dir,
        cap=cap,
        security=security_of(options),
        silence_s=options.dask_worker_timeout,
    )
    await executor.identify()  # a repository that cannot be shipped refuses before connecting
    await executor.connect()
    try:
        await executor.check_environment()
        await executor.prewarm()
        yield executor
    finally:
        await executor.close()

"""Executors: who runs a provider's ``Job``.

``local`` (this machine, ``changeloop.executors.job.LocalExecutor``) is the default;
``dask`` runs jobs on a Dask cluster and needs ``pip install 'changeloop[dask]'``.
Nothing from Dask is imported unless ``--executor dask`` asks for it.

A Dask worker decides results, so it is as trusted as the signing key: the
cluster is reached over TLS with a client certificate only (``tls://`` and the
CA, certificate and key, from ``--dask-tls-*`` or Dask's own
``distributed.comm.tls.*`` configuration); any other address is refused before
anything runs (``dask-insecure``) unless ``--dask-insecure`` says otherwise.
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
TLS_FIX = (
    "start the scheduler and workers with TLS (docs/scale-out.md shows how, certificates "
    "included) and pass --dask-scheduler tls://host:8786 --dask-tls-ca-file ca.pem "
    "--dask-tls-cert client.pem --dask-tls-key client.key (or set Dask's "
    "distributed.comm.tls.ca-file / .client.cert / .client.key); --dask-insecure accepts "
    "a cluster without TLS, on a network only you can reach"
)


def check_dask(options: ProveOptions) -> None:
    """Refuse a Dask run that cannot or must not start (exit 2); nothing is contacted.

    In order: the extra is installed, a scheduler is named, and the cluster is
    reached over TLS with a client certificate (or ``--dask-insecure``).
    """
    if options.executor != "dask":
        return
    try:
        from changeloop.executors.tls import tls_problem  # noqa: PLC0415 - cycle: changeloop.executors.tls imports this package (and dask)
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
    from changeloop.executors.dask import DaskExecutor  # noqa: PLC0415 - cycle: changeloop.executors.dask imports this package; only the Dask path needs distributed
    from changeloop.executors.tls import security_of  # noqa: PLC0415 - cycle: changeloop.executors.tls imports this package; only the Dask path needs dask

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

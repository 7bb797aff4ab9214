"""A worker's job processes: recorded where its replacement finds them, ended when it starts.

A job's command runs in a process group of its own, so a worker killed with -9
leaves it running. The worker records each group as the local runner does
(``changeloop.process.groups``: its jobs' directories lie under
``<dask scratch>/changeloop-worker/.changeloop/runs/<session>-<pid>/``, outside
the per-process directory Dask removes), and a worker that starts — the nanny's
replacement, or any other on that machine — sweeps what a dead worker left
(``changeloop.process.sweep``): its groups and every process carrying its owner marker.
The sweep runs from :class:`SweepOnStart` (registered by the coordinator, so the
scheduler hands it to every worker that joins) and, once per process, before a
worker's first job.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
from pathlib import Path
from typing import Any

from distributed import get_worker
from distributed.diagnostics.plugin import WorkerPlugin

PLUGIN_NAME = "changeloop-sweep-on-start"
_swept: set[int] = set()  # pids of this process that swept (a fork sweeps again)
_guard = threading.Lock()


def _worker() -> Any:
    return get_worker()


def state_dir(dask_worker: Any = None) -> Path:
    """The ``.changeloop`` of this machine's workers: beside Dask's per-worker directories."""
    try:
        worker = dask_worker or _worker()
        scratch = Path(worker.local_directory).parent
    except ValueError:  # not inside a worker (a direct call)
        scratch = Path(tempfile.gettempdir())
    return scratch / "changeloop-worker" / ".changeloop"


def run_dir(session: str, dask_worker: Any = None) -> Path:
    """This worker process's recorded run directory for the coordinator's ``session``."""
    return state_dir(dask_worker) / "runs" / f"{session}-{os.getpid()}"


def sweep_once(dask_worker: Any = None) -> None:
    """End what dead workers' jobs left, once per worker process (later calls cost nothing)."""
    with _guard:
        if os.getpid() in _swept:
            return
        _swept.add(os.getpid())
    from changeloop.process.sweep import sweep  # noqa: PLC0415 - process.sweep pulls in anyio and sandboxes; only the first job per worker sweeps

    state = state_dir(dask_worker)
    report = sweep(state)
    for name in report.runs:  # the dead worker's job directories go with its processes
        shutil.rmtree(state / "runs" / name, ignore_errors=True)


def close_session(session: str, dask_worker: Any = None) -> None:
    """The coordinator is done with ``session``: this process's job directories go."""
    shutil.rmtree(run_dir(session, dask_worker), ignore_errors=True)


class SweepOnStart(WorkerPlugin):
    """Registered by the coordinator: every worker that joins sweeps before its first task."""

    name = PLUGIN_NAME

    def setup(self, worker: Any) -> None:
        sweep_once(worker)

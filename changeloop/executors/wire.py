"""The records that travel between the coordinator and a Dask worker.

Only plain, frozen records cross the wire: a :class:`WireJob` goes out (the
``Job``, the run's session, the content archives a worker lacks, the services it
starts), a :class:`WireResult` comes back (the process record, its logs and the
files the command wrote, as tar archives). Secrets never travel: ``envFrom``
values are read on the worker from its own environment.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime

from changeloop.executors.job import Job
from changeloop.model import Service

Failure = tuple[str, str, str]  # (status, finding kind, message)


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
    # the other repositories its services live in (content by tree id, like any)
    service_repos: tuple[WireRepo, ...] = ()
    # this job is setup command number ``setup_step`` of its repository (the coordinator's
    # run_setup): it runs in the sandbox before the setup is complete, and sends back no outputs
    setup_step: int | None = None
    # other spellings of the job's sandbox path here (resolved): re-pointed too on the worker
    sandbox_aliases: tuple[str, ...] = ()

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

"""What one provider's command is (``Job``), what came of it (``JobResult``), who runs it.

A :class:`Job` is frozen and picklable: it names the sandbox by its content
tree, carries the environment as *differences* from the executor's own
(literal values, names to unset) plus the ``envFrom`` names whose values the
executor reads from its own environment, so no secret value and no open handle
travels with it. That is the seam a remote executor plugs into: anything with
``async run(job) -> JobResult`` will do.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

from changeloop.errors import Problem
from changeloop.masking import Masker
from changeloop.model import ClaimScope, Provider, SandboxMode
from changeloop.process.run import ProcessResult


@dataclass(frozen=True)
class SandboxSpec:
    """Where a job runs: a repository at one content tree (``path`` is its local copy)."""

    repository: str
    tree: str
    mode: SandboxMode
    path: str


@dataclass(frozen=True)
class Job:
    """One command to run for one provider, as data."""

    provider: Provider  # its wiring, as planned
    wiring: str  # the provider's wiring digest (changeloop.fingerprints.wiring)
    argv: tuple[str, ...]  # the effective command, as run
    sandbox: SandboxSpec
    env: tuple[tuple[str, str], ...] = ()  # literal values set on top of the executor's env
    unset: tuple[str, ...] = ()  # names removed from the executor's env
    env_from: tuple[str, ...] = ()  # names whose values the executor reads from its env
    masked: tuple[str, ...] = ()  # names whose values are masked in every log
    services: tuple[str, ...] = ()
    timeout_ms: int = 600_000
    log_dir: str = "."
    log_name: str = "job"
    # The folder inside the sandbox the command runs in ('' = the repository itself);
    # ``report`` stays relative to the sandbox.
    workdir: str = ""
    # The file the command writes (relative to the sandbox): a stale one is removed
    # before the run, its bytes come back in the result; ``keep_report`` keeps a
    # masked copy in ``log_dir``.
    report: str | None = None
    keep_report: bool = False
    collect: tuple[str, ...] = ()  # directories under log_dir whose files come back
    # Files the command reads from log_dir ("<dir>/<name>" -> bytes), already written there
    # by the adapter; a remote executor writes them into its own job directory first.
    inputs: tuple[tuple[str, bytes], ...] = ()
    # The run's stdout and whole log come back as bytes: runners whose report *is*
    # their output (libtest, unittest), and adapters that classify the output.
    output: bool = False
    claims: ClaimScope = field(default_factory=ClaimScope)
    context: Mapping[str, Any] = field(default_factory=dict)  # adapter-specific, JSON-able

    def environment(self, base: Mapping[str, str]) -> dict[str, str]:
        """The process environment this job gets on top of ``base``."""
        env = dict(base)
        for name in self.unset:
            env.pop(name, None)
        env.update(self.env)
        for name in self.env_from:
            if name in base:
                env[name] = base[name]
        return env

    def secrets(self, base: Mapping[str, str]) -> tuple[str, ...]:
        """The values masked in its logs: those of ``masked``, as the run's masker takes them."""
        return Masker(base[n] for n in self.masked if base.get(n)).secrets


@dataclass(frozen=True)
class JobResult:
    """The record of one finished job; the same attribute names as a ``ProcessResult``."""

    argv: tuple[str, ...]
    exit_code: int | None
    timed_out: bool
    spawn_error: str | None
    duration_ms: int
    log_path: Path
    stdout_path: Path | None  # only for a job that asked for its ``output``
    log_sha256: str
    stdout_tail: str
    stderr_tail: str
    log_tail: str
    started: datetime
    finished: datetime
    signal: int | None = None
    leftovers: bool = False
    report: bytes | None = None  # None: the job wrote no report
    report_error: str | None = None  # the report exists but could not be read
    files: Mapping[str, bytes] = field(default_factory=dict)  # "<dir>/<name>" -> bytes
    worker: str | None = (
        None  # the remote worker that ran it (docs/scale-out.md); None: this machine
    )
    # why a remote executor could not give the command a fair run: (status, finding kind,
    # message), e.g. ("fail", "content-mismatch", …) or ("inconclusive", "worker-lost", …)
    failure: tuple[str, str, str] | None = None
    stdout: bytes | None = None  # the whole stdout, when the job asked for its ``output``
    log: bytes | None = None  # the whole log (stdout and stderr interleaved), likewise

    @classmethod
    def of(
        cls, result: ProcessResult, started: datetime, finished: datetime, **more: Any
    ) -> JobResult:
        """The record of a finished process; ``more``: the job's other fields (report, files…)."""
        return cls(
            argv=result.argv,
            exit_code=result.exit_code,
            timed_out=result.timed_out,
            spawn_error=result.spawn_error,
            duration_ms=result.duration_ms,
            log_path=result.log_path,
            stdout_path=result.stdout_path,
            log_sha256=result.log_sha256,
            stdout_tail=result.stdout_tail,
            stderr_tail=result.stderr_tail,
            log_tail=result.log_tail,
            started=started,
            finished=finished,
            signal=result.signal,
            leftovers=result.leftovers,
            **more,
        )


class Executor(Protocol):
    """Who runs a job: this machine (``executors.local``) or a cluster (``executors.dask``)."""

    remote: bool  # jobs run elsewhere: their services start there, envFrom is read there

    @property
    def lost(self) -> Problem | None:
        """Why it can run nothing more (a cluster that lost its scheduler); None while it can."""
        ...

    @property
    def capacity(self) -> int | None:
        """How many jobs it runs at once (a cluster's worker threads); None: the run decides."""
        ...

    async def run(self, job: Job) -> JobResult: ...


def env_delta(
    env: Mapping[str, str], base: Mapping[str, str], env_from: Sequence[str]
) -> tuple[tuple[tuple[str, str], ...], tuple[str, ...]]:
    """``env`` as (values set, names unset) relative to ``base``; envFrom names never as values."""
    secret = set(env_from)
    changed = env.items() - base.items()  # set operations: no Python loop over the environment
    values = tuple(sorted(kv for kv in changed if kv[0] not in secret))
    unset = tuple(sorted(base.keys() - env.keys() - secret))
    return values, unset

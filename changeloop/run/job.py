"""What one provider's command is (``Job``), what came of it (``JobResult``), who runs it.

A :class:`Job` is frozen and picklable: it names the sandbox by its content
tree, carries the environment as *differences* from the executor's own
(literal values, names to unset) plus the ``envFrom`` names whose values the
executor reads from its own environment, so no secret value and no open handle
travels with it. That is the seam a remote executor (DESIGN.md §10) plugs into:
anything with ``async run(job) -> JobResult`` will do.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from changeloop.fsio import read_regular
from changeloop.model import ClaimScope, Provider, SandboxMode
from changeloop.processes import ProcessResult, run_process
from changeloop.spawn import environ


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
    wiring: str  # the provider's wiring digest (changeloop.wiring)
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
        from changeloop.masking import Masker  # masking imports the adapters' records

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
    stdout_path: Path
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
    worker: str | None = None  # the remote worker that ran it (DESIGN §10); None: this machine
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
    async def run(self, job: Job) -> JobResult: ...


class LocalExecutor:
    """Runs jobs as process groups on this machine (``changeloop.processes``).

    Jobs start from :func:`environ` (``os.environ`` decoded once while it does not
    change), and the values to mask are read once per set of names.
    """

    def __init__(self, environ: Mapping[str, str] | None = None) -> None:
        self._environ = environ
        # The masked values per set of names, for one base environment (a new one: reread).
        self._secrets: tuple[Mapping[str, str] | None, dict[tuple[str, ...], tuple[str, ...]]]
        self._secrets = (None, {})

    def _masked(self, job: Job, base: Mapping[str, str]) -> tuple[str, ...]:
        if self._secrets[0] is not base:
            self._secrets = (base, {})
        known = self._secrets[1]
        if job.masked not in known:
            known[job.masked] = job.secrets(base)
        return known[job.masked]

    async def run(self, job: Job) -> JobResult:
        base = environ() if self._environ is None else self._environ
        secrets = self._masked(job, base)
        log_dir = Path(job.log_dir)
        report = _fresh_report(job)
        started = datetime.now(UTC)
        result = await run_process(
            list(job.argv),
            cwd=Path(job.sandbox.path),
            env=job.environment(base),
            timeout_ms=job.timeout_ms,
            log_dir=log_dir,
            log_name=job.log_name,
            secrets=secrets,
        )
        data, error = _read_report(job, report, log_dir, secrets)
        stdout, log = (
            (_whole(result.stdout_path), _whole(result.log_path)) if job.output else (None, None)
        )
        return JobResult.of(
            result,
            started,
            datetime.now(UTC),
            report=data,
            report_error=error,
            files=_collected(job),
            stdout=stdout,
            log=log,
        )


def _fresh_report(job: Job) -> Path | None:
    """Where the job's report goes, with any stale one removed (None: no report, or it escapes)."""
    if job.report is None:
        return None
    root = Path(job.sandbox.path)
    path = root / job.report
    try:
        path.resolve().relative_to(root.resolve())
    except (ValueError, OSError, RuntimeError):
        return None  # the adapter refused it before building the job
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.is_file() or path.is_symlink():
        path.unlink()  # a stale report must never speak for this run
    return path


def _read_report(
    job: Job, path: Path | None, log_dir: Path, secrets: tuple[str, ...]
) -> tuple[bytes | None, str | None]:
    if path is None or not path.is_file():
        return None, None
    # imported only for a job that has a report: the readers' package costs ~35 ms to load
    from changeloop.errors import FileRefused
    from changeloop.masking import Masker
    from changeloop.providers.reports import REPORT_LIMIT

    if job.keep_report:
        with contextlib.suppress(OSError):  # the copy is for people; the reading is what counts
            # masked before it is stored (DESIGN §2.6): a test may assert on an envFrom value
            Masker(secrets).copy_file(path, log_dir / f"report{path.suffix or '.txt'}")
    try:
        return read_regular(path, limit=REPORT_LIMIT, what="report"), None
    except FileRefused as exc:
        return None, exc.problems[0].message


def _whole(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError:
        return b""


def _collected(job: Job) -> dict[str, bytes]:
    """The files of ``collect`` (relative to ``log_dir``) as ``"<dir>/<name>" -> bytes``."""
    files: dict[str, bytes] = {}
    for directory in (Path(job.log_dir) / d for d in job.collect):
        with contextlib.suppress(OSError):
            for path in sorted(directory.iterdir()):
                with contextlib.suppress(OSError):
                    if path.is_file():
                        files[f"{directory.name}/{path.name}"] = path.read_bytes()
    return files


def env_delta(
    env: Mapping[str, str], base: Mapping[str, str], env_from: Sequence[str]
) -> tuple[tuple[tuple[str, str], ...], tuple[str, ...]]:
    """``env`` as (values set, names unset) relative to ``base``; envFrom names never as values."""
    secret = set(env_from)
    changed = env.items() - base.items()  # set operations: no Python loop over the environment
    values = tuple(sorted(kv for kv in changed if kv[0] not in secret))
    unset = tuple(sorted(base.keys() - env.keys() - secret))
    return values, unset

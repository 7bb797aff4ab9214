"""The local executor: a :class:`~changeloop.executors.job.Job` run on this machine.

Its helpers (a fresh report path, the report read back, the collected files)
are public because the Dask coordinator turns a worker's answer into the same
:class:`~changeloop.executors.job.JobResult` with them.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path

from changeloop.errors import FileRefused
from changeloop.executors.job import Job, JobResult
from changeloop.fsio import read_regular
from changeloop.masking import Masker
from changeloop.passenv import Snapshot
from changeloop.process.run import run_process


class LocalExecutor:
    """Runs jobs as process groups on this machine (``changeloop.process.run``).

    Jobs start from ``environ`` (a run hands the :class:`~changeloop.passenv.Snapshot`
    it took as it started), or without one from ``os.environ`` as it is when each starts.
    """

    remote = False
    capacity = None  # this machine's slots are --jobs
    lost = None  # this machine never goes away mid-run

    def __init__(self, environ: Mapping[str, str] | Snapshot | None = None) -> None:
        self._snapshot = Snapshot(environ) if isinstance(environ, Mapping) else environ

    async def run(self, job: Job) -> JobResult:
        snapshot = Snapshot(os.environ) if self._snapshot is None else self._snapshot
        base = snapshot.environ
        secrets = job.secrets(base)
        log_dir = Path(job.log_dir)
        report = fresh_report(job)
        started = datetime.now(UTC)
        result = await run_process(
            list(job.argv),
            cwd=Path(job.sandbox.path) / job.workdir,
            # only the fixed set, passEnv and envFrom of this machine's environment
            env=job.environment(snapshot.cut(job.provider.pass_env, job.env_from)),
            timeout_ms=job.timeout_ms,
            log_dir=log_dir,
            log_name=job.log_name,
            secrets=secrets,
            keep_stdout=job.output,
        )
        data, error = read_report(job, report, log_dir, secrets)
        stdout, log = (
            (whole_bytes(result.stdout_path), whole_bytes(result.log_path))
            if job.output
            else (None, None)
        )
        return JobResult.of(
            result,
            started,
            datetime.now(UTC),
            report=data,
            report_error=error,
            files=collected_files(job),
            stdout=stdout,
            log=log,
        )


def fresh_report(job: Job) -> Path | None:
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


def read_report(
    job: Job, path: Path | None, log_dir: Path, secrets: tuple[str, ...]
) -> tuple[bytes | None, str | None]:
    if path is None or not path.is_file():
        return None, None
    from changeloop.runner_reports import REPORT_LIMIT  # noqa: PLC0415 - only a written report needs the report parsers (11 modules)

    if job.keep_report:
        with contextlib.suppress(OSError):  # the copy is for people; the reading is what counts
            # masked before it is stored: a test may assert on an envFrom value
            Masker(secrets).copy_file(path, log_dir / f"report{path.suffix or '.txt'}")
    try:
        return read_regular(path, limit=REPORT_LIMIT, what="report"), None
    except FileRefused as exc:
        return None, exc.problems[0].message


def whole_bytes(path: Path | None) -> bytes:
    if path is None:
        return b""
    try:
        return path.read_bytes()
    except OSError:
        return b""


def collected_files(job: Job) -> dict[str, bytes]:
    """The files of ``collect`` (relative to ``log_dir``) as ``"<dir>/<name>" -> bytes``."""
    files: dict[str, bytes] = {}
    for directory in (Path(job.log_dir) / d for d in job.collect):
        with contextlib.suppress(OSError):
            for path in sorted(directory.iterdir()):
                with contextlib.suppress(OSError):
                    if path.is_file():
                        files[f"{directory.name}/{path.name}"] = path.read_bytes()
    return files

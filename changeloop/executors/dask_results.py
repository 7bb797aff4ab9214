"""A worker's answer becomes the coordinator's ``JobResult`` (DESIGN.md §10).

The logs and the files the command wrote arrive as tar archives and are
unpacked where a local run would have left them, so the adapters read a remote
job exactly as a local one; a failure on the worker (lost, content mismatch,
setup) becomes a result with no exit code and the failure as its log.
"""

from __future__ import annotations

import io
import os
import tarfile
from datetime import UTC, datetime
from pathlib import Path

from changeloop.executors.job import Job, JobResult
from changeloop.executors.local import collected_files, fresh_report, read_report, whole_bytes
from changeloop.executors.wire import Failure, WireResult


def job_result(job: Job, answer: WireResult, started: datetime) -> JobResult:
    """A worker's answer as a ``JobResult``: its logs and outputs unpacked here, its report read."""
    if answer.failure is not None:
        return failed_result(job, started, answer.failure, [answer.worker])
    log_dir = Path(job.log_dir)
    report = fresh_report(job)  # a stale local report must not speak for this run
    _unpack(answer.logs, log_dir)
    _unpack(answer.outputs, Path(job.sandbox.path))
    data, error = read_report(job, report, log_dir, job.secrets(os.environ))
    log_path, stdout_path = log_dir / answer.log_name, log_dir / answer.stdout_name
    whole = (whole_bytes(stdout_path), whole_bytes(log_path)) if job.output else (None, None)
    return JobResult(
        argv=job.argv,
        exit_code=answer.exit_code,
        timed_out=answer.timed_out,
        spawn_error=answer.spawn_error,
        duration_ms=answer.duration_ms,
        log_path=log_path,
        stdout_path=stdout_path,
        log_sha256=answer.log_sha256,
        stdout_tail=answer.stdout_tail,
        stderr_tail=answer.stderr_tail,
        log_tail=answer.log_tail,
        started=answer.started or started,
        finished=answer.finished or datetime.now(UTC),
        signal=answer.signal,
        leftovers=answer.leftovers,
        report=data,
        report_error=error,
        files=collected_files(job),
        stdout=whole[0],
        log=whole[1],
        worker=answer.worker,
    )


def failed_result(job: Job, started: datetime, failure: Failure, workers: list[str]) -> JobResult:
    """A job that never ran to its end on a worker: the failure is its log and its outcome."""
    log_dir = Path(job.log_dir)
    log_dir.mkdir(parents=True, exist_ok=True)
    log = log_dir / f"{job.log_name}.log"
    log.write_text(failure[2] + "\n", encoding="utf-8")
    return JobResult(
        argv=job.argv,
        exit_code=None,
        timed_out=False,
        spawn_error=None,
        duration_ms=0,
        log_path=log,
        stdout_path=log,
        log_sha256="",
        stdout_tail="",
        stderr_tail="",
        log_tail=failure[2],
        started=started,
        finished=datetime.now(UTC),
        worker=workers[0] if workers else None,
        failure=failure,
    )


def _unpack(data: bytes, dest: Path) -> None:
    if not data:
        return
    dest.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:") as archive:  # the worker's plain tar
        archive.extractall(dest, filter="tar")

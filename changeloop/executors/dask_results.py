"""A worker's answer becomes the coordinator's ``JobResult``.

A worker's archives are data from another machine: they are unpacked into a
staging directory of this process (:mod:`changeloop.executors.staging`: regular
files and directories only, relative names without ``..``, bounded sizes), and
only what the job declared is taken from there — its log and stdout (copied
into the job's log directory as a local run leaves them), the files of its
``collect`` directories, and its report (read as bytes, never written into the
sandbox or checkout). Nothing a worker sends lands in ``.git/``, the state
directory or through a link. A failure on the worker (lost, content mismatch,
setup) becomes a result with no exit code and the failure as its log.
"""

from __future__ import annotations

import os
import tempfile
from datetime import UTC, datetime
from pathlib import Path

from changeloop.errors import FileRefused
from changeloop.executors.job import Job, JobResult
from changeloop.executors.staging import StagingRefused, copy_file, extract, read_file
from changeloop.executors.wire import Failure, WireResult
from changeloop.masking import Masker

REPORT_COPY = "report"  # the masked copy of a job's report in its log directory (as local runs)


def job_result(job: Job, answer: WireResult, started: datetime) -> JobResult:
    """A worker's answer as a ``JobResult``: its declared files taken from staging, read here."""
    if answer.failure is not None:
        return failed_result(job, started, answer.failure, [answer.worker])
    try:
        return _taken(job, answer, started)
    except (StagingRefused, FileRefused) as exc:
        why = f"worker {answer.worker} sent back what a job cannot have written: {exc}"
        return failed_result(job, started, ("inconclusive", "worker-error", why), [answer.worker])


def _taken(job: Job, answer: WireResult, started: datetime) -> JobResult:
    log_dir = Path(job.log_dir)
    log_dir.mkdir(parents=True, exist_ok=True)
    secrets = job.secrets(os.environ)
    with tempfile.TemporaryDirectory(prefix="changeloop-answer-") as tmp:
        logs, outputs = Path(tmp) / "logs", Path(tmp) / "outputs"
        extract(answer.logs, logs)
        extract(answer.outputs, outputs)
        log_path = copy_file(logs, answer.log_name, log_dir)
        stdout_path = copy_file(logs, answer.stdout_name, log_dir) if answer.stdout_name else None
        files: dict[str, bytes] = {}
        for folder in job.collect:  # the job's records (imports, grounding traces)
            directory = logs / folder
            if directory.is_dir() and not directory.is_symlink():
                for entry in sorted(directory.iterdir()):
                    data = read_file(logs, f"{folder}/{entry.name}")
                    if data is not None:
                        files[f"{folder}/{entry.name}"] = data
        report: bytes | None = None
        report_error: str | None = None
        if job.report is not None:
            report, report_error = _report(job, outputs, log_dir, secrets)
        whole = (_whole(stdout_path), _whole(log_path)) if job.output else (None, None)
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
        report=report,
        report_error=report_error,
        files=files,
        stdout=whole[0],
        log=whole[1],
        worker=answer.worker,
    )


def _report(
    job: Job, outputs: Path, log_dir: Path, secrets: tuple[str, ...]
) -> tuple[bytes | None, str | None]:
    """The report's bytes from staging (None: not written), and its masked copy for people."""
    from changeloop.runner_reports import REPORT_LIMIT  # noqa: PLC0415 - only a written report needs the report parsers (11 modules)

    assert job.report is not None
    try:
        data = read_file(outputs, job.report, limit=REPORT_LIMIT)
    except FileRefused as exc:
        return None, exc.problems[0].message
    if data is not None and job.keep_report:
        suffix = Path(job.report).suffix or ".txt"
        copy = log_dir / f"{REPORT_COPY}{suffix}"
        tmp = outputs / f".{REPORT_COPY}{suffix}"
        tmp.write_bytes(data)
        Masker(secrets).copy_file(tmp, copy)
    return data, None


def _whole(path: Path | None) -> bytes:
    if path is None:
        return b""
    try:
        return path.read_bytes()
    except OSError:
        return b""


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
        stdout_path=None,
        log_sha256="",
        stdout_tail="",
        stderr_tail="",
        log_tail=failure[2],
        started=started,
        finished=datetime.now(UTC),
        worker=workers[0] if workers else None,
        failure=failure,
    )

"""What a test run left behind, read for the adapter: its report and its import records (pure).

Example::

    report = report_of(job, result)    # ReportResult, or None when the named report is missing
    names(report, ("failed", "error")) # the failed tests' ids, at most MAX_NAMES
    foreign_imports(job, result)       # {package: Finding} imported from outside the repository

With no ``report`` named, libtest text is read from stdout (``cargo test``), and
unittest's ``-v`` output from the whole log (it writes to stderr) when ``format:
unittest`` names it or the output looks like it. Everything comes from the
``JobResult`` the executor returned: nothing here touches the file system.
"""

from __future__ import annotations

from pathlib import Path

from changeloop.executors.job import Job, JobResult
from changeloop.outcome import Finding
from changeloop.providers.pytest_injection import outside_imports
from changeloop.runner_reports import canonical_format, read_report
from changeloop.runner_reports.model import ReportResult, unreadable
from changeloop.runner_reports.sniff import sniff

MAX_NAMES = 200


def report_of(job: Job, result: JobResult) -> ReportResult | None:
    """The normalized report, or None when the named report was not written."""
    provider = job.provider
    fmt = canonical_format(provider.format) if provider.format else None
    if provider.report is None:
        stdout = as_text(result.stdout).encode()
        log = as_text(result.log).encode()
        if fmt is None and sniff(stdout) is None:
            fmt = "unittest" if sniff(log) == "unittest" else None
        if fmt == "unittest":
            # unittest writes to stderr: read the whole log (stdout and stderr interleaved).
            return read_report(log, fmt)
        return read_report(stdout, fmt or "libtest")
    if result.report is not None:
        return read_report(result.report, fmt)
    if result.report_error is not None:
        return unreadable(fmt or "unknown", f"cannot read report: {result.report_error}")
    return None


def foreign_imports(job: Job, result: JobResult) -> dict[str, Finding]:
    """The plugin's import records (collected by the executor) judged against the repository."""
    folder = job.context.get("imports")
    if folder is None:
        return {}
    prefix = f"{folder}/"
    blobs = {n[len(prefix) :]: b for n, b in result.files.items() if n.startswith(prefix)}
    roots = tuple(Path(r) for r in job.context["roots"])
    return outside_imports(blobs, roots, job.context["packages"], Path(job.context["source"]))


def names(report: ReportResult | None, outcomes: tuple[str, ...]) -> tuple[str, ...]:
    """The ids of the tests whose outcome is one of ``outcomes`` (at most MAX_NAMES)."""
    if report is None or report.tests is None:
        return ()
    return tuple(t.id for t in report.tests if t.outcome in outcomes)[:MAX_NAMES]


def as_text(data: bytes | None) -> str:
    """Output bytes as text; a byte that is not UTF-8 never stops the reading."""
    return (data or b"").decode("utf-8", errors="replace")

"""test-discovery's report reading and verdict helpers on recorded runner output.

``report_of`` decides which reader reads a finished job (the named report, else
libtest from stdout, else unittest from the whole log); ``names`` and
``version_from_output`` fill the receipt. The bytes are real runs recorded under
tests/fixtures/reports/ (make_fixtures.py); the job and its result are records.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from repo_paths import FIXTURES

from changeloop.executors.job import Job, JobResult, SandboxSpec
from changeloop.model import Provider
from changeloop.providers.test_discovery_judge import version_from_output
from changeloop.providers.test_discovery_report import MAX_NAMES, as_text, names, report_of

REPORTS = FIXTURES / "reports"
T = datetime(2026, 1, 1, tzinfo=UTC)


def job(report: str | None = None, fmt: str | None = None) -> Job:
    provider = Provider(
        name="test", adapter="test-discovery", capability="test", report=report, format=fmt
    )
    return Job(provider, "sha256:w", ("run",), SandboxSpec("self", "t", "none", "."))


def result(**over: object) -> JobResult:
    fields: dict[str, object] = {
        "argv": ("run",), "exit_code": 0, "timed_out": False, "spawn_error": None,
        "duration_ms": 1, "log_path": Path("log"), "stdout_path": Path("out"),
        "log_sha256": "", "stdout_tail": "", "stderr_tail": "", "log_tail": "",
        "started": T, "finished": T,
    }  # fmt: skip
    fields.update(over)
    return JobResult(**fields)  # type: ignore[arg-type]


def test_without_a_named_report_cargo_output_is_read_as_libtest() -> None:
    stdout = (REPORTS / "cargo/green/stdout.txt").read_bytes()
    report = report_of(job(), result(stdout=stdout, log=stdout))
    assert report is not None and report.format == "libtest"
    assert report.counts is not None and report.counts.passed >= 1


def test_unittest_is_read_from_the_whole_log_when_stdout_is_empty() -> None:
    """unittest writes to stderr: stdout sniffs as nothing, the log as unittest."""
    log = (REPORTS / "unittest/py3.11/green/stderr.txt").read_bytes()
    report = report_of(job(), result(stdout=b"", log=log))
    assert report is not None and report.format == "unittest"
    assert report.counts is not None and report.counts.failed == 0 and report.ran
    named = report_of(job(fmt="unittest"), result(stdout=b"", log=log))
    assert named is not None and named.counts == report.counts


def test_a_named_report_is_read_or_said_missing_or_unreadable() -> None:
    xml = (REPORTS / "pytest/failing/report.xml").read_bytes()
    read = report_of(job("out.xml"), result(report=xml))
    assert read is not None and read.format == "junit" and read.counts is not None
    assert read.counts.failed >= 1
    assert report_of(job("out.xml"), result()) is None  # not written: tests: null
    broken = report_of(job("out.xml", "junit"), result(report_error="Permission denied"))
    assert broken is not None and broken.counts is None
    assert broken.error == "cannot read report: Permission denied"


def test_names_are_filtered_by_outcome_and_bounded() -> None:
    xml = (REPORTS / "pytest/failing/report.xml").read_bytes()
    report = report_of(job("out.xml"), result(report=xml))
    assert report is not None and report.tests is not None
    failed = names(report, ("failed", "error"))
    assert failed and set(failed) == {
        t.id for t in report.tests if t.outcome in ("failed", "error")
    }
    assert names(None, ("passed",)) == ()
    many = "running 250 tests\n" + "".join(f"test t{i} ... ok\n" for i in range(250))
    many += "\ntest result: ok. 250 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out\n"
    big = report_of(job(), result(stdout=many.encode()))
    assert big is not None and big.counts is not None and big.counts.passed == 250
    assert names(big, ("passed",)) == tuple(f"t{i}" for i in range(MAX_NAMES))


def test_version_from_output_and_text_of_any_bytes() -> None:
    assert version_from_output("pytest", "platform linux -- Python 3.11, pytest-8.3.2") == "8.3.2"
    assert version_from_output("vitest", " RUN  v4.1.2 /repo") == "4.1.2"
    assert version_from_output("jest", "pytest-8.3.2") is None  # only the runner's own
    assert version_from_output(None, "pytest-8.3.2") is None
    assert as_text(b"ok \xff") == "ok \ufffd" and as_text(None) == ""

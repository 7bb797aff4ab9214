"""The ``test`` and ``discovery`` verdicts of a test run (pure; docs/adapters).

Example::

    judge_test(0, False, report, ".changeloop/reports/test.xml")    # ("pass", None)
    judge_test(0, False, None, "out.xml")    # ("inconclusive", "exited 0 but wrote no report …")
    judge_discovery(0, False, report, minimum=5)   # ("fail", "3 test(s) ran, fewer than …")

``test`` passes only when the exit code is 0 *and* the report shows no failed
test and no suite-level failure: a report never outvotes the exit code. A
missing or unreadable report is ``tests: null`` — ``fail`` on a non-zero exit,
``inconclusive`` on exit 0. ``discovery`` counts the tests that actually ran
(passed + failed) against ``minimum``; zero always fails.
"""

from __future__ import annotations

import re

from changeloop.model import Status
from changeloop.runner_reports.model import ReportResult

NOTHING_FAILED = "although the report shows no failed test"


def judge_test(
    exit_code: int | None, timed_out: bool, report: ReportResult | None, report_named: str | None
) -> tuple[Status, str | None]:
    """The ``test`` receipt: exit code and report must both say the suite passed."""
    if timed_out:
        return "fail", "the test run timed out"
    counts = report.counts if report else None
    if exit_code != 0:
        what = f"exited {exit_code}"
        if counts is None:
            why = (
                report.error
                if report and report.error
                else f"no report at {report_named}"
                if report_named
                else "no test summary"
            )
            return "fail", f"{what}; {why} (no test count)"
        if counts.failed:
            named = failed_names(report)
            return "fail", f"{what}; {counts.failed} of {counts.discovered} test(s) failed{named}"
        if report is not None and report.suite_failed:
            return "fail", f"{what}; a test file or suite failed outside any test"
        return "fail", f"{what} {NOTHING_FAILED}"
    if report is None:
        return "inconclusive", f"exited 0 but wrote no report at {report_named} (no test count)"
    if counts is None:
        return "inconclusive", f"exited 0 but the report could not be read: {report.error}"
    if counts.failed:
        named = failed_names(report)
        return "fail", f"exited 0 but the report shows {counts.failed} failed test(s){named}"
    if report.suite_failed:
        return "fail", "exited 0 but the report shows a failure outside any test"
    return "pass", None


SHOWN_FAILURES = 3


def failed_names(report: ReportResult | None) -> str:
    """``: a, b, c (+4 more)`` naming the failed tests, for the reason the board shows."""
    if report is None or not report.tests:
        return ""
    failed = [t.id for t in report.tests if t.outcome in ("failed", "error")]
    if not failed:
        return ""
    more = f" (+{len(failed) - SHOWN_FAILURES} more)" if len(failed) > SHOWN_FAILURES else ""
    return ": " + ", ".join(failed[:SHOWN_FAILURES]) + more


def judge_discovery(
    exit_code: int | None, timed_out: bool, report: ReportResult | None, minimum: int
) -> tuple[Status, str | None]:
    """The ``discovery`` receipt: tests that ran (passed + failed) must reach ``minimum``."""
    ran = report.ran if report else None
    if ran is None:
        if timed_out or exit_code != 0:
            return "fail", "the runner could not say which tests ran"
        return "inconclusive", "the runner could not say which tests ran"
    if ran == 0:
        return "fail", "no test ran (zero matched, all skipped or none found)"
    if ran < minimum:
        return "fail", f"{ran} test(s) ran, fewer than minimum {minimum}"
    return "pass", None


# Runners that print their own version in the run's output, when the report does not say.
_VERSION_PATTERNS = {
    "pytest": re.compile(r"\bpytest-(\d+\.\d+(?:\.\d+)?)"),
    "vitest": re.compile(r"\bRUN\s+v(\d+\.\d+\.\d+)"),
}


def version_from_output(tool: str | None, output: str) -> str | None:
    """The runner's version from its own output, for a report that does not carry it."""
    pattern = _VERSION_PATTERNS.get(tool or "")
    match = pattern.search(output) if pattern else None
    return match.group(1) if match else None

"""Read libtest text (``cargo test`` on stable) from the captured stdout.

Example::

    result = read(Path("run/test.stdout"))
    result.counts     # summed over every test binary (unit, tests/*.rs, doc-tests)

Each binary prints ``running N tests``, one ``test NAME ... ok|FAILED|ignored``
line per test and a summary ``test result: ok. P passed; F failed; I ignored;
M measured; X filtered out``. Counts are the sums of the summary lines (filtered
tests are not discovered). No summary line at all (a compile error) ⇒ the runner
could not say: ``counts is None``. A ``running N tests`` without its summary
(a binary that aborted) is a suite failure. Rust test names cannot carry
``[claim:id]`` tags; cite claims with the provider's ``claims:`` instead.
"""

from __future__ import annotations

import re
from pathlib import Path

from changeloop.outcome import TestCounts
from changeloop.runner_reports.model import (
    CaseOutcome,
    Finding,
    ReportResult,
    TestCase,
    claim_tags,
    strip_ansi,
)

FORMAT = "libtest"
_RUNNING = re.compile(r"^running (\d+) tests?$")
_CASE = re.compile(r"^test (?P<name>.+?) \.\.\. (?P<status>ok|FAILED|ignored)\b")
_SUMMARY = re.compile(
    r"^test result: (?P<word>ok|FAILED)\. (?P<p>\d+) passed; (?P<f>\d+) failed; "
    r"(?P<i>\d+) ignored; (?P<m>\d+) measured; (?P<x>\d+) filtered out"
)
_STATUS: dict[str, CaseOutcome] = {"ok": "passed", "FAILED": "failed", "ignored": "skipped"}


def read(source: Path | bytes) -> ReportResult:
    """Parse libtest output (a path or bytes); never raises on odd input."""
    try:
        raw = source.read_bytes() if isinstance(source, Path) else source
    except OSError as exc:
        return ReportResult(
            format=FORMAT,
            tests=None,
            counts=None,
            error=str(exc),
            findings=(Finding(kind="report-missing", message=str(exc)),),
        )
    return parse(strip_ansi(raw.decode("utf-8", errors="replace")))


def parse(text: str) -> ReportResult:
    """Sum the summary lines; list the per-test lines."""
    passed = failed = ignored = 0
    summaries = 0
    open_binaries = 0
    tests: list[TestCase] = []
    findings: list[Finding] = []
    for raw_line in text.splitlines():
        line = raw_line.rstrip()
        if _RUNNING.match(line):
            open_binaries += 1
            continue
        case = _CASE.match(line)
        if case:
            name = case.group("name")
            outcome = _STATUS[case.group("status")]
            tests.append(TestCase(name=name, outcome=outcome, claims=claim_tags(name)))
            if outcome == "failed":
                findings.append(Finding(kind="test-failed", message=f"{name}: FAILED"))
            continue
        summary = _SUMMARY.match(line)
        if summary:
            summaries += 1
            open_binaries = max(0, open_binaries - 1)
            passed += int(summary.group("p"))
            failed += int(summary.group("f"))
            ignored += int(summary.group("i"))
    suite_failed = open_binaries > 0
    if suite_failed:
        findings.append(
            Finding(
                kind="suite-error",
                severity="error",
                message="a test binary stopped before printing its summary (aborted or killed)",
            )
        )
    if summaries == 0:
        return ReportResult(
            format=FORMAT,
            tests=None,
            counts=None,
            findings=tuple(findings),
            tool="cargo",
            suite_failed=suite_failed,
            error="no libtest summary line (`test result: …`) in the output",
        )
    counts = TestCounts(
        discovered=passed + failed + ignored, passed=passed, failed=failed, skipped=ignored
    )
    return ReportResult(
        format=FORMAT,
        tests=tuple(tests),
        counts=counts,
        findings=tuple(findings),
        tool="cargo",
        suite_failed=suite_failed,
    )

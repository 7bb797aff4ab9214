"""Read TAP 13/14 as ``node --test --test-reporter=tap`` writes it.

Example::

    result = read(Path("test-results/unit.tap"))

Nested subtests are indented by four spaces and printed before their parent's
own ``ok``/``not ok`` line; a result line right after deeper ones is a suite,
not a test (a failing suite with no failing child is still a failure). ``# SKIP``
and ``# TODO`` are skipped. A file that fails to load is one failing test
named by its path (REPORTS.md). No result and no plan at all ⇒ unreadable.
"""

from __future__ import annotations

import re
from pathlib import Path

from changeloop.providers.reports.junit import clip
from changeloop.providers.reports.model import (
    CaseOutcome,
    Finding,
    ReportResult,
    TestCase,
    claim_tags,
    counts_of,
    unreadable,
)

FORMAT = "tap"
_RESULT = re.compile(r"^(?P<indent> *)(?P<ok>not ok|ok)\b(?: +\d+)?(?: *-)? *(?P<rest>.*)$")
_DIRECTIVE = re.compile(r"\s+#\s*(?P<kind>SKIP|TODO)\b.*$", re.IGNORECASE)
_PLAN = re.compile(r"^ *1\.\.(\d+)")
_ERROR = re.compile(r"^ +error: +(?P<msg>.+)$")


def read(source: Path | bytes, exit_code: int | None = None) -> ReportResult:
    """Parse a TAP stream; unreadable ⇒ ``counts is None`` with the reason."""
    try:
        raw = source.read_bytes() if isinstance(source, Path) else source
        text = raw.decode("utf-8", errors="replace")
    except OSError as exc:
        return unreadable(FORMAT, f"TAP report is not readable: {exc}")
    return parse(text)


def parse(text: str) -> ReportResult:
    """Normalize a TAP document."""
    entries: list[tuple[int, TestCase, bool]] = []  # (indent, case, is_suite)
    saw_plan = False
    last_indent: int | None = None
    for line in text.splitlines():
        if _PLAN.match(line):
            saw_plan = True
            continue
        found = _RESULT.match(line)
        if not found:
            err = _ERROR.match(line)
            if err and entries:
                indent, case, suite = entries[-1]
                if case.outcome == "failed" and case.message is None:
                    msg = clip(err.group("msg").strip().strip("'\""), 500)
                    entries[-1] = (indent, _with_message(case, msg), suite)
            continue
        indent = len(found.group("indent"))
        rest = found.group("rest")
        directive = _DIRECTIVE.search(rest)
        name = _DIRECTIVE.sub("", rest).strip()
        passed_line = found.group("ok") == "ok"
        outcome: CaseOutcome = "skipped" if directive else "passed" if passed_line else "failed"
        is_suite = last_indent is not None and last_indent > indent
        entries.append((indent, TestCase(name=name, outcome=outcome, claims=claim_tags(name)),
                        is_suite))
        last_indent = indent
    if not entries and not saw_plan:
        return unreadable(FORMAT, "no TAP plan or result line found (truncated or not TAP)")
    tests: list[TestCase] = []
    findings: list[Finding] = []
    suite_failed = False
    for index, (indent, case, is_suite) in enumerate(entries):
        if is_suite:
            children_failed = False
            back = index - 1
            while back >= 0 and entries[back][0] > indent:  # the run of its own subtests
                children_failed |= entries[back][1].outcome == "failed"
                back -= 1
            if case.outcome == "failed" and not children_failed:
                suite_failed = True
                findings.append(Finding(kind="suite-error", severity="error",
                                        message=clip(f"{case.name}: {case.message or 'failed'}")))
            continue
        tests.append(case)
        if case.outcome == "failed":
            findings.append(Finding(kind="test-failed",
                                    message=clip(f"{case.name}: {case.message or 'failed'}")))
    return ReportResult(format=FORMAT, tests=tuple(tests), counts=counts_of(tests),
                        findings=tuple(findings), suite_failed=suite_failed)


def _with_message(case: TestCase, message: str) -> TestCase:
    return TestCase(name=case.name, outcome=case.outcome, file=case.file, claims=case.claims,
                    message=message, duration_ms=case.duration_ms)

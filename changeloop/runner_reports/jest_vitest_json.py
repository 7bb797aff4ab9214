"""Read vitest (``--reporter=json``) and jest (``--json``) reports.

Example::

    result = read(Path("test-results/unit.json"))
    result.tool            # "vitest" or "jest"

Both share the jest shape: ``testResults[]`` per file, each with
``assertionResults[]`` (``status`` passed|failed|skipped|todo, jest says
``pending`` for skipped). Their lies (REPORTS.md) are handled here:

- a file that fails to import is ``status: "failed"`` with no assertions — its
  tests are counted nowhere, so it becomes a finding and ``suite_failed``;
- ``success`` is ignored (jest says true when no file matched; vitest says
  true with an unhandled error after the tests) — only the exit code and the
  per-test statuses count;
- a failing ``beforeAll`` in vitest leaves its tests *skipped* with the file
  failed: same rule, the failed file is a finding.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from changeloop.runner_reports.junit import clip
from changeloop.runner_reports.model import (
    CaseOutcome,
    Finding,
    ReportResult,
    TestCase,
    claim_tags,
    counts_of,
    unreadable,
)

FORMAT = "jest-json"
_STATUS: dict[str, CaseOutcome] = {
    "passed": "passed",
    "failed": "failed",
    "skipped": "skipped",
    "pending": "skipped",
    "todo": "skipped",
    "disabled": "skipped",
    "focused": "skipped",
}


def looks_like_jest(doc: Mapping[str, Any]) -> bool:
    """jest adds keys vitest lacks."""
    return "numRuntimeErrorTestSuites" in doc or "wasInterrupted" in doc


def read(source: Path | bytes) -> ReportResult:
    """Parse a vitest or jest JSON report; unreadable ⇒ ``counts is None`` with the reason."""
    try:
        raw = source.read_bytes() if isinstance(source, Path) else source
        doc = json.loads(raw)
    except (OSError, ValueError) as exc:
        return unreadable(FORMAT, f"vitest/jest JSON report is not readable JSON: {exc}")
    if not isinstance(doc, dict) or not isinstance(doc.get("testResults"), list):
        return unreadable(FORMAT, "not a vitest/jest JSON report (no 'testResults' list)")
    return parse(doc)


def parse(doc: Mapping[str, Any]) -> ReportResult:
    """Normalize an already-decoded report."""
    tool = "jest" if looks_like_jest(doc) else "vitest"
    tests: list[TestCase] = []
    findings: list[Finding] = []
    suite_failed = False
    for file_result in doc.get("testResults") or []:
        if not isinstance(file_result, dict):
            continue
        file = str(file_result.get("name") or "") or None
        assertions = [a for a in file_result.get("assertionResults") or [] if isinstance(a, dict)]
        file_cases = [_case(a, file) for a in assertions]
        tests.extend(file_cases)
        for case in file_cases:
            if case.outcome == "failed":
                findings.append(
                    Finding(kind="test-failed", message=clip(f"{case.id}: {case.message}"))
                )
        status = file_result.get("status")
        if status == "failed" and not any(c.outcome == "failed" for c in file_cases):
            # Import failure, empty file, failing beforeAll: no failing test says so.
            suite_failed = True
            message = clip(str(file_result.get("message") or "test file failed"))
            findings.append(
                Finding(
                    kind="suite-error", message=f"{file}: {message}", severity="error", file=file
                )
            )
    if not doc.get("testResults") and doc.get("numTotalTestSuites", 0) == 0:
        findings.append(Finding(kind="no-tests-collected", message="no test file matched"))
    return ReportResult(
        format="jest-json" if tool == "jest" else "vitest-json",
        tests=tuple(tests),
        counts=counts_of(tests),
        findings=tuple(findings),
        tool=tool,
        suite_failed=suite_failed,
        extra={"success": doc.get("success")},
    )


def _case(raw: Mapping[str, Any], file: str | None) -> TestCase:
    name = str(raw.get("fullName") or raw.get("title") or "")
    outcome = _STATUS.get(str(raw.get("status")), "skipped")
    failures = [str(m) for m in raw.get("failureMessages") or []]
    duration = raw.get("duration")
    return TestCase(
        name=name,
        outcome=outcome,
        file=file,
        claims=claim_tags(name),
        message=clip(failures[0], 500) if failures else None,
        duration_ms=round(duration) if isinstance(duration, int | float) else None,
    )

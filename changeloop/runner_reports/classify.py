"""Classify a test run from what the process said, beyond what its report says.

Example::

    findings = classify(timed_out=False, output=stdout + stderr,
                        report=None, report_named="test-results/unit.xml")

Kinds (docs/design.md): ``timeout``, ``report-missing``, ``no-tests-collected``,
``pytest-conftest-error``, ``pytest-import-error``, ``pytest-collection-error``
(the last two only when no report carried them), ``compile-error``.
"""

from __future__ import annotations

import re

from changeloop.runner_reports.junit import clip
from changeloop.runner_reports.model import Finding, ReportResult, strip_ansi

_CONFTEST = re.compile(r"ImportError while loading conftest '([^']+)'")
_NO_TESTS = re.compile(
    r"no tests ran|No test files found|No tests found|no tests collected|"
    r"Pattern: .* - 0 matches|No test suite found",
)
_UNHANDLED = re.compile(
    r"Unhandled (?:Errors?|Rejection)|asynchronous activity after the test ended"
)
_COMPILE = re.compile(r"error: could not compile `([^`]+)`")


def _excerpt(text: str, marker: str, lines: int = 6) -> str:
    """The marker's line and a few after it: enough to see why, bounded."""
    all_lines = text.splitlines()
    for i, line in enumerate(all_lines):
        if marker in line:
            return clip("\n".join(all_lines[i : i + lines]), 800)
    return clip(marker, 800)


def classify(
    *,
    timed_out: bool,
    output: str,
    report: ReportResult | None,
    report_named: str | None,
    timeout_ms: int | None = None,
) -> list[Finding]:
    """Findings from the output (and a timeout); ``report`` findings are not repeated.

    The exit code is not an input: the adapter judges it (``judge_test``).
    """
    text = strip_ansi(output)
    have = {f.kind for f in report.findings} if report is not None else set()
    out: list[Finding] = []
    if timed_out:
        secs = f" after {timeout_ms / 1000:g} s" if timeout_ms else ""
        out.append(
            Finding(kind="timeout", message=f"the test run was killed{secs}", severity="error")
        )
    conftest = _CONFTEST.search(text)
    if conftest:
        out.append(
            Finding(
                kind="pytest-conftest-error",
                severity="error",
                message=_excerpt(text, conftest.group(0)),
                file=conftest.group(1),
            )
        )
    if report is None or report.counts is None:
        if "ImportError while importing test module" in text and "pytest-import-error" not in have:
            out.append(
                Finding(
                    kind="pytest-import-error",
                    severity="error",
                    message=_excerpt(text, "ImportError while importing test module"),
                )
            )
        elif "ERROR collecting" in text and "pytest-collection-error" not in have:
            out.append(
                Finding(
                    kind="pytest-collection-error",
                    severity="error",
                    message=_excerpt(text, "ERROR collecting"),
                )
            )
        compile_error = _COMPILE.search(text)
        if compile_error:
            out.append(
                Finding(
                    kind="compile-error",
                    severity="error",
                    message=clip(compile_error.group(0), 800),
                )
            )
    unhandled = _UNHANDLED.search(text)
    if unhandled:
        out.append(
            Finding(
                kind="unhandled-error", severity="error", message=_excerpt(text, unhandled.group(0))
            )
        )
    if report_named is not None and report is None:
        out.append(
            Finding(
                kind="report-missing",
                severity="error",
                message=f"the runner did not write {report_named}",
            )
        )
    ran = report.ran if report is not None else None
    no_tests = _NO_TESTS.search(text)
    if "no-tests-collected" not in have and (ran == 0 or (ran is None and no_tests)):
        why = no_tests.group(0) if no_tests else "no test ran (all skipped, filtered or none found)"
        out.append(Finding(kind="no-tests-collected", message=why))
    return out

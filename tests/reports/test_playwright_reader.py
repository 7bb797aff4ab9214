"""Playwright JSON shapes that real runs produce but are slow to provoke: never-run, interrupted,
"No tests found", unreadable. Shapes follow REPORTS.md (Playwright 1.65)."""

from __future__ import annotations

import json
from typing import Any

from changeloop.runner_reports import playwright_json


def _report(tests: list[dict[str, Any]], errors: list[dict[str, Any]] | None = None) -> bytes:
    return json.dumps(
        {
            "config": {"version": "1.65.1"},
            "suites": [
                {
                    "title": "a.spec.js",
                    "file": "a.spec.js",
                    "specs": [
                        {"title": f"t{i}", "file": "a.spec.js", "tests": [t]}
                        for i, t in enumerate(tests)
                    ],
                }
            ],
            "errors": errors or [],
            "stats": {"expected": 0, "unexpected": 0, "flaky": 0, "skipped": 0},
        }
    ).encode()


def _test(
    status: str, results: list[str], expected: str = "passed", claim: str = "c"
) -> dict[str, Any]:
    return {
        "annotations": [{"type": "claim", "description": claim}],
        "expectedStatus": expected,
        "status": status,
        "projectName": "chromium",
        "results": [
            {
                "status": r,
                "duration": 5,
                "retry": i,
                "error": {"message": "\x1b[31mboom\x1b[39m"} if r == "failed" else None,
            }
            for i, r in enumerate(results)
        ],
    }


def test_never_run_and_interrupted_tests_credit_nothing() -> None:
    result = playwright_json.read(
        _report(
            [
                _test("skipped", []),  # --max-failures: never ran
                _test("skipped", ["interrupted"]),  # SIGINT
                _test("expected", ["passed"], claim="ok"),
            ]
        )
    )
    assert [t.outcome for t in result.tests or ()] == ["skipped", "skipped", "passed"]
    assert result.credited_claims() == ("ok",)
    assert result.counts is not None and result.counts.skipped == 2


def test_failure_message_is_ansi_free_and_claim_failed() -> None:
    result = playwright_json.read(_report([_test("unexpected", ["failed", "failed"])]))
    (case,) = result.tests or ()
    assert case.outcome == "failed" and case.message == "boom"
    assert result.failed_claims() == ("c",)


def test_no_tests_found_is_a_suite_failure() -> None:
    result = playwright_json.read(_report([], errors=[{"message": "Error: No tests found"}]))
    assert result.suite_failed
    assert [f.kind for f in result.findings] == ["no-tests-collected"]


def test_unreadable_report_means_could_not_tell() -> None:
    for data in (b"{not json", b'{"stats": {}}'):
        result = playwright_json.read(data)
        assert result.counts is None and result.tests is None and result.error

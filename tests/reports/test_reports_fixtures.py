"""Every checked-in report fixture (made by running the real tools, see
tests/fixtures/reports/make_fixtures.py) read, classified and judged exactly."""

from __future__ import annotations

import json

import pytest
from repo_paths import FIXTURES

from changeloop.providers.reports import read_report
from changeloop.providers.reports.classify import classify
from changeloop.providers.test_discovery import judge_discovery, judge_test

FIXTURES = FIXTURES / "reports"

# runner, case, report file, exit code, test status, discovery status,
# counts (discovered, passed, failed, skipped) or None, finding kinds
CASES = [
    ("cargo", "abort", "libtest.txt", 101, "fail", "pass", (2, 1, 0, 1), ["suite-error"]),
    ("cargo", "compile_error", "libtest.txt", 101, "fail", "fail", None, ["compile-error", "report-unreadable"]),
    ("cargo", "failing", "libtest.txt", 101, "fail", "pass", (4, 2, 1, 1), ["test-failed"]),
    ("cargo", "failing_no_fail_fast", "libtest.txt", 101, "fail", "pass", (3, 1, 1, 1), ["test-failed"]),
    ("cargo", "filter_nomatch", "libtest.txt", 0, "pass", "fail", (0, 0, 0, 0), ["no-tests-collected"]),
    ("cargo", "green", "libtest.txt", 0, "pass", "pass", (3, 2, 0, 1), []),
    ("cargo", "no_tests", "libtest.txt", 0, "pass", "fail", (0, 0, 0, 0), ["no-tests-collected"]),
    ("jest", "beforeall_fail", "report.xml", 1, "fail", "pass", (2, 0, 2, 0), ["test-failed"]),
    ("jest", "beforeall_fail", "report.json", 1, "fail", "pass", (2, 0, 2, 0), ["test-failed"]),
    # jest-junit drops the suite that failed to run: only the exit code tells.
    ("jest", "empty_file", "report.xml", 1, "fail", "pass", (2, 2, 0, 0), []),
    ("jest", "empty_file", "report.json", 1, "fail", "pass", (2, 2, 0, 0), ["suite-error"]),
    ("jest", "failing", "report.xml", 1, "fail", "pass", (2, 1, 1, 0), ["test-failed"]),
    ("jest", "failing", "report.json", 1, "fail", "pass", (2, 1, 1, 0), ["test-failed"]),
    ("jest", "filter_nomatch", "report.xml", 0, "pass", "fail", (2, 0, 0, 2), ["no-tests-collected"]),
    ("jest", "filter_nomatch", "report.json", 0, "pass", "fail", (2, 0, 0, 2), ["no-tests-collected"]),
    ("jest", "green", "report.xml", 0, "pass", "pass", (2, 2, 0, 0), []),
    ("jest", "green", "report.json", 0, "pass", "pass", (2, 2, 0, 0), []),
    ("jest", "import_error", "report.xml", 1, "fail", "pass", (2, 2, 0, 0), []),
    ("jest", "import_error", "report.json", 1, "fail", "pass", (2, 2, 0, 0), ["suite-error"]),
    ("jest", "no_files", "report.json", 1, "fail", "fail", None, ["report-missing"]),
    # jest-junit writes a todo test as a passing testcase (a lie we cannot see).
    ("jest", "skipped", "report.xml", 0, "pass", "pass", (2, 1, 0, 1), []),
    ("jest", "skipped", "report.json", 0, "pass", "fail", (2, 0, 0, 2), ["no-tests-collected"]),
    ("jest", "unhandled_after", "report.json", 1, "fail", "pass", (2, 1, 1, 0), ["test-failed"]),
    ("node", "failing", "report.xml", 1, "fail", "pass", (3, 2, 1, 0), ["test-failed"]),
    ("node", "failing", "report.tap", 1, "fail", "pass", (3, 2, 1, 0), ["test-failed"]),
    ("node", "filter_nomatch", "report.xml", 0, "pass", "fail", (2, 0, 0, 2), ["no-tests-collected"]),
    ("node", "filter_nomatch", "report.tap", 0, "pass", "fail", (2, 0, 0, 2), ["no-tests-collected"]),
    ("node", "green", "report.xml", 0, "pass", "pass", (2, 2, 0, 0), []),
    ("node", "green", "report.tap", 0, "pass", "pass", (2, 2, 0, 0), []),
    ("node", "import_error", "report.xml", 1, "fail", "pass", (3, 2, 1, 0), ["test-failed"]),
    ("node", "import_error", "report.tap", 1, "fail", "pass", (3, 2, 1, 0), ["test-failed"]),
    ("node", "no_files", "report.xml", 0, "pass", "fail", (0, 0, 0, 0), ["no-tests-collected"]),
    ("node", "no_files", "report.tap", 0, "pass", "fail", (0, 0, 0, 0), ["no-tests-collected"]),
    ("node", "skipped", "report.xml", 0, "pass", "fail", (2, 0, 0, 2), ["no-tests-collected"]),
    ("node", "skipped", "report.tap", 0, "pass", "fail", (2, 0, 0, 2), ["no-tests-collected"]),
    ("node", "unhandled_after", "report.tap", 1, "fail", "pass", (3, 2, 1, 0), ["test-failed", "unhandled-error"]),
    ("pytest", "call_and_teardown_fail", "report.xml", 1, "fail", "pass", (1, 0, 1, 0), ["test-failed"]),
    ("pytest", "call_and_teardown_fail", "report.json", 1, "fail", "pass", (1, 0, 1, 0), ["test-failed"]),
    ("pytest", "conftest_import_error", "report.xml", 4, "fail", "fail", None, ["pytest-conftest-error", "report-missing"]),
    ("pytest", "conftest_import_error", "report.json", 4, "fail", "fail", None, ["pytest-conftest-error", "report-missing"]),
    ("pytest", "failing", "report.xml", 1, "fail", "pass", (2, 1, 1, 0), ["test-failed"]),
    ("pytest", "failing", "report.json", 1, "fail", "pass", (2, 1, 1, 0), ["test-failed"]),
    ("pytest", "filter_nomatch", "report.xml", 5, "fail", "fail", (0, 0, 0, 0), ["no-tests-collected"]),
    ("pytest", "filter_nomatch", "report.json", 5, "fail", "fail", (0, 0, 0, 0), ["no-tests-collected"]),
    ("pytest", "green", "report.xml", 0, "pass", "pass", (2, 2, 0, 0), []),
    ("pytest", "green", "report.json", 0, "pass", "pass", (2, 2, 0, 0), []),
    ("pytest", "import_error", "report.xml", 2, "fail", "fail", (0, 0, 0, 0), ["no-tests-collected", "pytest-import-error"]),
    ("pytest", "import_error", "report.json", 2, "fail", "fail", (0, 0, 0, 0), ["no-tests-collected", "pytest-import-error"]),
    ("pytest", "import_error_continue", "report.xml", 1, "fail", "pass", (2, 2, 0, 0), ["pytest-import-error"]),
    ("pytest", "import_error_continue", "report.json", 1, "fail", "pass", (2, 2, 0, 0), ["pytest-import-error"]),
    ("pytest", "internal_error_after", "report.xml", 1, "fail", "pass", (2, 2, 0, 0), []),
    ("pytest", "internal_error_after", "report.json", 1, "fail", "pass", (2, 2, 0, 0), []),
    ("pytest", "missing_fixture", "report.xml", 1, "fail", "pass", (3, 2, 1, 0), ["pytest-fixture-error", "test-failed"]),
    ("pytest", "missing_fixture", "report.json", 1, "fail", "pass", (3, 2, 1, 0), ["pytest-fixture-error", "test-failed"]),
    ("pytest", "module_skip", "report.xml", 0, "pass", "pass", (2, 2, 0, 0), []),
    ("pytest", "module_skip", "report.json", 0, "pass", "pass", (2, 2, 0, 0), []),
    ("pytest", "no_tests", "report.xml", 5, "fail", "fail", (0, 0, 0, 0), ["no-tests-collected"]),
    ("pytest", "no_tests", "report.json", 5, "fail", "fail", (0, 0, 0, 0), ["no-tests-collected"]),
    ("pytest", "session_teardown_error", "report.xml", 1, "fail", "pass", (2, 1, 1, 0), ["test-failed"]),
    ("pytest", "session_teardown_error", "report.json", 1, "fail", "pass", (2, 1, 1, 0), ["test-failed"]),
    ("pytest", "setup_error", "report.xml", 1, "fail", "pass", (3, 2, 1, 0), ["test-failed"]),
    ("pytest", "setup_error", "report.json", 1, "fail", "pass", (3, 2, 1, 0), ["test-failed"]),
    ("pytest", "skipped", "report.xml", 0, "pass", "fail", (2, 0, 0, 2), ["no-tests-collected"]),
    ("pytest", "skipped", "report.json", 0, "pass", "fail", (2, 0, 0, 2), ["no-tests-collected"]),
    ("pytest", "syntax_error", "report.xml", 2, "fail", "fail", (0, 0, 0, 0), ["no-tests-collected", "pytest-collection-error"]),
    ("pytest", "syntax_error", "report.json", 2, "fail", "fail", (0, 0, 0, 0), ["no-tests-collected", "pytest-collection-error"]),
    ("pytest", "teardown_error", "report.xml", 1, "fail", "pass", (3, 2, 1, 0), ["test-failed"]),
    ("pytest", "teardown_error", "report.json", 1, "fail", "pass", (3, 2, 1, 0), ["test-failed"]),
    ("pytest", "xfail_xpass", "report.xml", 1, "fail", "pass", (4, 2, 1, 1), ["test-failed"]),
    ("pytest", "xfail_xpass", "report.json", 1, "fail", "pass", (4, 2, 1, 1), ["test-failed"]),
    ("vitest", "beforeall_fail", "report.xml", 1, "fail", "pass", (3, 0, 1, 2), ["test-failed"]),
    # REPORTS.md: a failing beforeAll shows its tests skipped, numFailedTests 0.
    ("vitest", "beforeall_fail", "report.json", 1, "fail", "fail", (2, 0, 0, 2), ["no-tests-collected", "suite-error"]),
    ("vitest", "empty_file", "report.xml", 1, "fail", "pass", (3, 2, 1, 0), ["test-failed"]),
    ("vitest", "empty_file", "report.json", 1, "fail", "pass", (2, 2, 0, 0), ["suite-error"]),
    ("vitest", "failing", "report.xml", 1, "fail", "pass", (2, 1, 1, 0), ["test-failed"]),
    ("vitest", "failing", "report.json", 1, "fail", "pass", (2, 1, 1, 0), ["test-failed"]),
    ("vitest", "filter_nomatch", "report.xml", 0, "pass", "fail", (2, 0, 0, 2), ["no-tests-collected"]),
    ("vitest", "filter_nomatch", "report.json", 0, "pass", "fail", (2, 0, 0, 2), ["no-tests-collected"]),
    ("vitest", "green", "report.xml", 0, "pass", "pass", (2, 2, 0, 0), []),
    ("vitest", "green", "report.json", 0, "pass", "pass", (2, 2, 0, 0), []),
    ("vitest", "import_error", "report.xml", 1, "fail", "pass", (3, 2, 1, 0), ["test-failed"]),
    ("vitest", "import_error", "report.json", 1, "fail", "pass", (2, 2, 0, 0), ["suite-error"]),
    ("vitest", "no_files", "report.json", 1, "fail", "fail", (0, 0, 0, 0), ["no-tests-collected"]),
    ("vitest", "skipped", "report.json", 0, "pass", "fail", (2, 0, 0, 2), ["no-tests-collected"]),
    # REPORTS.md: vitest says success: true with exit 1 after an unhandled error.
    ("vitest", "unhandled_after", "report.json", 1, "fail", "pass", (2, 2, 0, 0), []),
]


@pytest.mark.parametrize(("runner", "case", "name", "code", "test", "disc", "counts", "kinds"), CASES,
                         ids=[f"{c[0]}-{c[1]}-{c[2]}" for c in CASES])
def test_fixture_is_judged_exactly(
    runner: str,
    case: str,
    name: str,
    code: int,
    test: str,
    disc: str,
    counts: tuple[int, int, int, int] | None,
    kinds: list[str],
) -> None:
    folder = FIXTURES / runner / case
    meta = json.loads((folder / "meta.json").read_text())
    assert meta["exit_code"] == code
    path = folder / name
    report = read_report(path) if path.exists() else None
    found = classify(timed_out=False, output=(folder / "stdout.txt").read_text(),
                     report=report, report_named=name)
    assert judge_test(code, False, report, name)[0] == test
    assert judge_discovery(code, False, report, 1)[0] == disc
    got = report.counts if report else None
    assert (tuple(got.to_json().values()) if got else None) == counts
    all_kinds = {f.kind for f in (report.findings if report else ())} | {f.kind for f in found}
    assert sorted(all_kinds) == kinds


def test_lying_green_reports_never_pass() -> None:
    """Every lying report of REPORTS.md yields a non-passing test receipt."""
    lies = [("vitest", "unhandled_after", "report.json"), ("vitest", "beforeall_fail", "report.json"),
            ("pytest", "import_error", "report.json"), ("jest", "import_error", "report.xml"),
            ("pytest", "internal_error_after", "report.xml")]
    for runner, case, name in lies:
        folder = FIXTURES / runner / case
        code = json.loads((folder / "meta.json").read_text())["exit_code"]
        assert judge_test(code, False, read_report(folder / name), name)[0] != "pass"

"""The unittest reader against real ``python -m unittest`` output of 3.11, 3.12 and 3.13.

Fixtures: tests/fixtures/reports/unittest/py<version>/<case>/ (stderr.txt is
what unittest printed; meta.json has its exit code), made by
make_unittest_fixtures.py with each interpreter's own unittest.
"""

from __future__ import annotations

import json
import re

import pytest
from repo_paths import FIXTURES

from changeloop.providers.test_discovery_judge import judge_discovery, judge_test
from changeloop.runner_reports import read_report
from changeloop.runner_reports.sniff import sniff

FIXTURES = FIXTURES / "reports" / "unittest"
VERSIONS = sorted(p.name for p in FIXTURES.glob("py3.*"))


def _case(version: str, case: str) -> tuple[bytes, int, int]:
    """(stderr bytes, exit code, unittest's own `Ran N`)."""
    folder = FIXTURES / version / case
    data = (folder / "stderr.txt").read_bytes()
    meta = json.loads((folder / "meta.json").read_text())
    ran = re.search(rb"^Ran (\d+) tests?", data, re.MULTILINE)
    assert ran is not None
    return data, meta["exit_code"], int(ran.group(1))


def test_fixtures_cover_311_and_312_plus() -> None:
    assert {"py3.11", "py3.12", "py3.13"} <= set(VERSIONS)


@pytest.mark.parametrize("version", VERSIONS)
def test_green_with_load_tests_doctest_counts_ran_n(version: str) -> None:
    data, code, ran = _case(version, "green")
    assert sniff(data) == "unittest"
    result = read_report(data)
    assert result.format == "unittest" and result.tool == "unittest"
    assert result.counts is not None
    assert result.counts.to_json() == {"discovered": ran, "passed": ran, "failed": 0, "skipped": 0}
    assert ran == 3  # two methods and the doctest load_tests adds
    names = {t.id for t in result.tests or ()}
    assert "pkg.tests.test_add.TestAdd::test_cited" in names
    assert "pkg::add" in names  # the doctest
    assert result.credited_claims() == ("adds",)  # cited in the docstring's first line
    assert judge_test(code, False, result, None) == ("pass", None)
    assert judge_discovery(code, False, result, 3)[0] == "pass"


@pytest.mark.parametrize("version", VERSIONS)
def test_mixed_outcomes_are_normalized(version: str) -> None:
    data, code, ran = _case(version, "mixed")
    result = read_report(data)
    outcomes = {t.name: t.outcome for t in result.tests or ()}
    assert outcomes == {
        "test_ok": "passed",
        "test_fail": "failed",
        "test_error": "error",
        "test_skip": "skipped",
        "test_xfail": "skipped",  # expected failure counts as skipped
        "test_xpass": "failed",  # unexpected success counts as failed
        "test_sub": "failed",  # two failing subtests fail one test
    }
    messages = {t.name: t.message for t in result.tests or ()}
    assert messages["test_error"] == "RuntimeError: boom"
    assert messages["test_fail"] == "AssertionError: 2 != 3"
    assert result.failed_claims() == ("broken",)
    assert result.counts is not None and result.counts.discovered == ran
    if ran == 7:
        assert result.counts.to_json() == {"discovered": 7, "passed": 1, "failed": 4, "skipped": 2}
        assert "count-mismatch" not in {f.kind for f in result.findings}
    else:  # 3.12.1 leaves the skipped test out of `Ran N`
        assert "count-mismatch" in {f.kind for f in result.findings}
        assert result.counts.to_json() == {
            "discovered": ran,
            "passed": 1,
            "failed": 4,
            "skipped": ran - 5,
        }
    assert result.extra["failures"] == 3 and result.extra["errors"] == 1
    assert judge_test(code, False, result, None)[0] == "fail"
    # The exit code is never outvoted: the same output with exit 0 still fails.
    assert judge_test(0, False, result, None)[0] == "fail"


@pytest.mark.parametrize("version", VERSIONS)
def test_quiet_output_is_a_count_mismatch_filled_from_the_summary(version: str) -> None:
    data, code, ran = _case(version, "quiet")
    result = read_report(data, "unittest")
    assert result.counts is not None and result.counts.discovered == ran
    assert result.counts.failed == min(ran, 5) and result.counts.skipped == min(ran - 5, 2)
    assert "count-mismatch" in {f.kind for f in result.findings}
    assert judge_test(code, False, result, None)[0] == "fail"


@pytest.mark.parametrize("version", VERSIONS)
def test_import_error_is_a_failed_test_with_its_finding(version: str) -> None:
    data, code, _ = _case(version, "import_error")
    result = read_report(data)
    assert result.counts is not None
    assert result.counts.to_json() == {"discovered": 2, "passed": 1, "failed": 1, "skipped": 0}
    kinds = {f.kind for f in result.findings}
    assert "unittest-import-error" in kinds
    assert judge_test(code, False, result, None)[0] == "fail"


@pytest.mark.parametrize("version", VERSIONS)
def test_no_tests_fails_discovery(version: str) -> None:
    data, code, _ = _case(version, "no_tests")
    result = read_report(data, "unittest")
    assert result.counts is not None and result.counts.discovered == 0
    assert judge_discovery(code, False, result, 1)[0] == "fail"
    expected = "pass" if code == 0 else "fail"  # 3.11 exits 0; 3.12+ exit 5 "NO TESTS RAN"
    assert judge_test(code, False, result, None)[0] == expected


@pytest.mark.parametrize("version", VERSIONS)
def test_a_test_writing_to_stderr_keeps_its_status(version: str) -> None:
    data, _code, _ = _case(version, "stderr_noise")
    assert sniff(data) == "unittest"  # the bare "ok" line must not look like TAP
    result = read_report(data)
    assert result.counts is not None
    assert result.counts.to_json() == {"discovered": 2, "passed": 2, "failed": 0, "skipped": 0}
    assert "count-mismatch" not in {f.kind for f in result.findings}


def test_cut_short_run_could_not_say() -> None:
    data = b"test_a (m.T.test_a) ... ok\ntest_b (m.T.test_b) ... "
    result = read_report(data, "unittest")
    assert result.counts is None and result.error is not None
    assert {t.name: t.outcome for t in result.tests or ()} == {
        "test_a": "passed",
        "test_b": "error",
    }
    assert judge_test(-9, False, result, None)[0] == "fail"


def test_summary_without_ok_or_failed_is_a_suite_failure() -> None:
    data = b"test_a (m.T.test_a) ... ok\n\n" + b"-" * 70 + b"\nRan 1 test in 0.000s\n"
    result = read_report(data, "unittest")
    assert result.suite_failed and judge_test(0, False, result, None)[0] == "fail"


def test_python_310_description_format() -> None:
    data = (
        b"test_a (pkg.tests.T) ... ok\ntest_b (pkg.tests.T)\nDoc [claim:c1]. ... ok\n\n"
        + b"-" * 70
        + b"\nRan 2 tests in 0.001s\n\nOK\n"
    )
    result = read_report(data)
    assert [t.id for t in result.tests or ()] == ["pkg.tests.T::test_a", "pkg.tests.T::test_b"]
    assert result.credited_claims() == ("c1",)

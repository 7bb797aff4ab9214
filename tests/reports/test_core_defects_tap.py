"""A TAP stream must account for itself (plan, bail-out), exit 0 or not."""

from __future__ import annotations

import base64
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from prove_helpers import git, make_change, make_repo, prove_json, receipts_of
from repo_paths import FIXTURES

from changeloop.runner_reports import read_report
from changeloop.runner_reports.tap import parse

FIXTURES = FIXTURES / "reports"
NODE_TAPS = sorted(FIXTURES.glob("node*/*/report.tap"))


def _kinds(text: str) -> list[str]:
    return [f.kind for f in parse(text).findings]


def test_short_plan_is_a_failed_suite() -> None:
    result = parse("TAP version 13\n1..3\nok 1 - a\nok 2 - b\n")
    assert result.counts is not None and result.counts.passed == 2
    assert result.suite_failed
    [finding] = [f for f in result.findings if f.kind == "tap-plan-mismatch"]
    assert (
        "1..3" in finding.message and "short" in finding.message and "2 result" in finding.message
    )


def test_plan_at_the_end_short_too() -> None:
    assert parse("ok 1 - a\nok 2 - b\n1..3\n").suite_failed


def test_more_results_than_planned_is_a_failed_suite() -> None:
    result = parse("1..1\nok 1 - a\nok 2 - b\n")
    assert result.suite_failed and "exceeded" in result.findings[0].message


def test_bail_out_is_a_failed_suite_with_its_reason() -> None:
    result = parse("1..3\nok 1 - a\nBail out! database is down\n")
    assert result.suite_failed
    assert _kinds("1..3\nok 1 - a\nBail out! database is down\n") == ["tap-bail-out"]
    assert "database is down" in result.findings[0].message


def test_bail_out_inside_a_subtest_counts_too() -> None:
    text = "# Subtest: s\n    ok 1 - a\n    Bail out!\nnot ok 1 - s\n1..1\n"
    assert parse(text).suite_failed and "tap-bail-out" in _kinds(text)


def test_results_without_any_plan_are_a_truncated_stream() -> None:
    result = parse("TAP version 13\nok 1 - a\n")
    assert result.suite_failed and _kinds("ok 1 - a\n") == ["tap-plan-missing"]


@pytest.mark.parametrize(
    "text",
    [
        "1..2\nok 1 - a\nok 2 - b\n",
        "ok 1 - a\nok 2 - b # SKIP later\n1..2\n",
        "1..0 # SKIP nothing to do\n",
        "1..1\n# Subtest: s\n    1..2\n    ok 1 - a\n    ok 2 - b\nok 1 - s\n",
    ],
)
def test_a_stream_that_adds_up_is_not_failed(text: str) -> None:
    result = parse(text)
    assert not result.suite_failed and not _kinds(text)


@pytest.mark.parametrize("path", NODE_TAPS, ids=lambda p: f"{p.parent.parent.name}/{p.parent.name}")
def test_every_real_node_tap_fixture_adds_up(path: Path) -> None:
    result = read_report(path, format="tap")
    assert not [f for f in result.findings if f.kind.startswith("tap-")], result.findings


def test_a_real_node_stream_missing_a_nested_result_is_short() -> None:
    text = (FIXTURES / "node_suites" / "same_names" / "report.tap").read_text()
    lines = text.splitlines(keepends=True)
    start = lines.index("    # Subtest: is unique\n")  # the first describe's second test
    end = start + 1
    while not lines[end].startswith("    # Subtest:") and not lines[end].startswith("    1.."):
        end += 1
    result = parse("".join(lines[:start] + lines[end:]))
    assert result.suite_failed
    [finding] = [f for f in result.findings if f.kind == "tap-plan-mismatch"]
    assert "1..2" in finding.message and "subtest" in finding.message


def test_a_real_node_stream_cut_before_its_plan_is_missing_it() -> None:
    text = (FIXTURES / "node" / "green" / "report.tap").read_text()
    cut = text[: text.index("\n1..")]
    assert parse(cut).suite_failed and "tap-plan-missing" in _kinds(cut)


WRITER = """\
import sys
open("report.tap", "w").write(sys.argv[1].replace("|", "\\n"))
"""


@pytest.mark.parametrize(
    ("stream", "kind"),
    [
        ("TAP version 13|1..3|ok 1 - a|ok 2 - b|", "tap-plan-mismatch"),
        ("TAP version 13|1..3|ok 1 - a|Bail out! no database|", "tap-bail-out"),
    ],
)
def test_prove_fails_an_exit_0_run_whose_tap_does_not_add_up(
    tmp_path: Path, capsys: Any, stream: str, kind: str
) -> None:
    root = make_repo(tmp_path / "ws", {"tap.py": WRITER})
    make_change(
        root,
        "c1",
        "version: 3\nclaims:\n  works:\n    statement: it works\n    requires: [test]\n",
        f"""\
        version: 1
        providers:
          test:
            adapter: test-discovery
            command: [{sys.executable}, tap.py, "{stream}"]
            report: report.tap
            format: tap
            claims: [works]
        """,
    )
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "change")
    code, doc = prove_json(root, "c1", capsys=capsys)
    assert code == 1, doc
    test = receipts_of(doc, "test")["test"]
    assert test["status"] == "fail", test
    assert doc["claims"]["works"]["status"] == "failed"
    envelope = json.loads((root / str(test["path"])).read_text())
    extension = json.loads(base64.b64decode(envelope["payload"]))["predicate"]["changeloop"]
    assert extension["exitCode"] == 0
    assert kind in [f["kind"] for f in extension["findings"]], extension["findings"]

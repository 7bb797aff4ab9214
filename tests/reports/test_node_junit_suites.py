"""node --test: a test is identified by its suite path, and a describe's `[claim:id]` cites for
the tests inside it. Fixtures are real node 20 output
(tests/fixtures/reports/node_suites/make.py)."""

from __future__ import annotations

import base64
import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from prove_helpers import git, make_change, make_repo, prove_json, receipts_of
from repo_paths import FIXTURES

from changeloop.runner_reports import read_report

FIXTURES = FIXTURES / "reports"
SUITES = FIXTURES / "node_suites"
NODE_XML = sorted([*FIXTURES.glob("node/*/report.xml"), *SUITES.glob("*/report.xml")])


def _node_total(xml: Path) -> int:
    found = re.search(r"<!-- tests (\d+) -->", xml.read_text())
    assert found, xml
    return int(found.group(1))


def test_same_named_tests_in_different_describes_stay_apart() -> None:
    result = read_report(SUITES / "same_names" / "report.xml", format="junit")
    assert result.counts is not None
    assert (result.counts.discovered, result.counts.passed, result.counts.failed) == (8, 7, 1)
    outcomes = [(t.id, t.outcome) for t in result.tests or ()]
    assert outcomes == [
        ("[claim:v4-ids] v4 > is valid", "passed"),
        ("[claim:v4-ids] v4 > is unique", "passed"),
        ("[claim:v7-ids] v7 > is valid", "failed"),
        ("[claim:v7-ids] v7 > is unique", "passed"),
        ("[claim:v7-ids] v7 > [claim:v7-order] ordering > is valid", "passed"),
        ("is valid", "passed"),
        ("v4 > is valid", "passed"),
        ("is valid", "passed"),  # another file's top-level test of the same name
    ]
    [failed] = [f.message for f in result.findings if f.kind == "test-failed"]
    assert failed.startswith("[claim:v7-ids] v7 > is valid: Expected values to be strictly equal")


def test_a_describe_claim_tag_cites_for_every_test_inside_it() -> None:
    result = read_report(SUITES / "same_names" / "report.xml", format="junit")
    claims = {t.id: t.claims for t in result.tests or ()}
    assert claims["[claim:v4-ids] v4 > is unique"] == ("v4-ids",)
    assert claims["[claim:v7-ids] v7 > [claim:v7-order] ordering > is valid"] == (
        "v7-ids",
        "v7-order",
    )
    assert claims["v4 > is valid"] == ()
    assert result.credited_claims() == ("v4-ids", "v7-ids", "v7-order")
    assert result.failed_claims() == ("v7-ids",)


@pytest.mark.parametrize("case", ["same_names", "describe_claims"])
def test_tap_and_junit_of_one_run_agree(case: str) -> None:
    xml = read_report(SUITES / case / "report.xml", format="junit")
    tap = read_report(SUITES / case / "report.tap", format="tap")

    def view(tests: Any) -> list[tuple[str, str, tuple[str, ...]]]:
        return [(t.id, t.outcome, t.claims) for t in tests]

    assert view(xml.tests) == view(tap.tests)
    assert xml.counts == tap.counts
    assert xml.credited_claims() == tap.credited_claims()


@pytest.mark.parametrize("xml", NODE_XML, ids=lambda p: f"{p.parent.parent.name}/{p.parent.name}")
def test_junit_count_is_nodes_own_total_or_says_why_not(xml: Path) -> None:
    result = read_report(xml, format="junit")
    assert result.counts is not None
    mismatch = [f.message for f in result.findings if f.kind == "count-mismatch"]
    if xml.parent.name == "subtests_and_empty":
        assert result.counts.discovered == 10 and _node_total(xml) == 9
        assert mismatch and "node reports 9 test(s) but its JUnit lists 10" in mismatch[0]
    else:
        assert result.counts.discovered == _node_total(xml) and not mismatch


NODE_TAP = sorted([*FIXTURES.glob("node/*/report.tap"), *SUITES.glob("*/report.tap")])


@pytest.mark.parametrize("tap", NODE_TAP, ids=lambda p: f"{p.parent.parent.name}/{p.parent.name}")
def test_tap_counts_are_nodes_own_totals(tap: Path) -> None:
    totals = {k: int(v) for k, v in re.findall(r"^# (\w+) (\d+)$", tap.read_text(), re.M)}
    counts = read_report(tap, format="tap").counts
    assert counts is not None
    assert counts.discovered == totals["tests"]
    assert counts.passed == totals["pass"]
    assert counts.failed == totals["fail"] + totals["cancelled"]
    assert counts.skipped == totals["skipped"] + totals["todo"]


def test_a_test_with_subtests_is_a_test_and_an_empty_describe_is_not() -> None:
    result = read_report(SUITES / "subtests_and_empty" / "report.tap", format="tap")
    ids = [t.id for t in result.tests or ()]
    assert "parent" in ids and "parent > child 1" in ids
    assert "empty" not in ids and "skipped suite" not in ids
    assert "outer > inner > deepest > leaf" in ids


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_prove_credits_a_describe_claim_and_counts_every_test(tmp_path: Path, capsys: Any) -> None:
    sources = json.loads((SUITES / "describe_claims" / "meta.json").read_text())["sources"]
    root = make_repo(tmp_path / "ws", sources)
    make_change(
        root,
        "c1",
        "version: 3\nclaims:\n  parse:\n    statement: parses\n    requires: [test]\n",
        """\
        version: 1
        providers:
          test:
            adapter: test-discovery
            command: [node, --test, --test-reporter=junit, --test-reporter-destination=report.xml,
                      a.test.js]
            report: report.xml
            format: junit
            minimum: 3
        """,
    )
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "change")
    code, doc = prove_json(root, "c1", capsys=capsys)
    assert code == 0, doc
    assert doc["claims"]["parse"]["status"] == "proven", doc["claims"]
    test = receipts_of(doc, "test")["test"]
    envelope = json.loads((root / str(test["path"])).read_text())
    extension = json.loads(base64.b64decode(envelope["payload"]))["predicate"]["changeloop"]
    assert extension["tests"]["discovered"] == 3 and extension["tests"]["passed"] == 3
    assert extension["claims"] == {"parse": "credited"}

"""The citation rules as pure functions: depth checked, the tracer's record as the only source,
the crediting rule, native JavaScript citations, the custom runner's envelope.

These tests cite the claims of changeloop's own change `grounded-citations` with depth, and
that change declares the functions they call as entry points: `changeloop prove
grounded-citations` proves it with its own grounding (scripts/self-prove.sh).
"""

from __future__ import annotations

import pytest

from changeloop.grounding.citations import check_depths, from_record
from changeloop.providers.command import envelope_report
from changeloop.runner_reports.jest_vitest_json import meta_citations
from changeloop.runner_reports.model import Citation, ReportResult, TestCase, claim_note
from changeloop.verdict import citation_credits


def _report(*cases: TestCase) -> ReportResult:
    return ReportResult(format="junit", tests=cases, counts=None)


@pytest.mark.claim("depth-is-checked", depth="unit")
def test_an_unknown_depth_is_refused_by_name_and_e2e_is_smoke() -> None:
    report = _report(
        TestCase("a", "passed", claims=("c",), citations=(Citation("c", depth="bogus"),)),
        TestCase("b", "passed", claims=("c",), citations=(Citation("c", depth="e2e"),)),
    )
    checked, findings = check_depths(report, entry_points=False)
    assert [f.kind for f in findings] == ["citation-depth-invalid"]
    assert "a cites c with depth 'bogus'" in findings[0].message
    assert checked is not None and checked.tests is not None
    assert [t.citations[0].depth for t in checked.tests] == [None, "smoke"]


@pytest.mark.claim("depth-is-checked", depth="unit")
def test_no_depth_is_a_hard_error_only_under_entry_points() -> None:
    report = _report(TestCase("a", "passed", claims=("c",)))
    assert check_depths(report, entry_points=False)[1] == []
    [finding] = check_depths(report, entry_points=True)[1]
    assert finding.kind == "citation-depth-missing" and "a (c)" in finding.message


@pytest.mark.claim("grounding-from-the-tracer", depth="unit")
def test_claims_and_grounding_come_from_the_record_alone() -> None:
    forged = Citation("c", depth="unit", grounding="grounded")
    report = _report(
        TestCase("test_x", "passed", file="tests.test_a", claims=("c",), citations=(forged,)),
        TestCase("test_y", "passed", file="tests.test_a", claims=("d",)),
    )
    record = {
        "tests/test_a.py::test_x": {
            "claims": {"c": {"depth": "unit"}},
            "junit": ["tests.test_a", "test_x"],
            "grounding": "untouched",
            "reached_outside_entry": False,
        }
    }
    result = from_record(report, record)
    assert result is not None and result.tests is not None
    x, y = result.tests
    assert x.citations == (
        Citation("c", depth="unit", grounding="untouched", reached_outside_entry=False),
    )
    assert (y.claims, y.citations) == ((), ())  # a claim property with no marker


@pytest.mark.claim("grounding-from-the-tracer", depth="unit")
def test_an_unobserved_citation_never_credits_under_entry_points() -> None:
    assert citation_credits("behavioral", "grounded", entry_points=True)
    assert citation_credits("behavioral", "not-checked", entry_points=False)
    assert not citation_credits("behavioral", "not-checked", entry_points=True)
    assert not citation_credits("behavioral", None, entry_points=True)
    assert citation_credits("structural", "inert", entry_points=True)
    assert not citation_credits("structural", "untouched", entry_points=True)


@pytest.mark.claim("native-citations", depth="unit")
def test_vitest_meta_and_node_diagnostics_cite_with_depth() -> None:
    assert meta_citations({"claim": ["a", "b"], "depth": "unit", "ref": "X-1"}) == (
        Citation("a", depth="unit", ref="X-1"),
        Citation("b", depth="unit", ref="X-1"),
    )
    assert meta_citations({"depth": "unit"}) == ()
    assert claim_note("claim: slug depth=component ref=W-2") == Citation(
        "slug", depth="component", ref="W-2"
    )
    assert claim_note("a diagnostic about something else") is None


@pytest.mark.claim("native-citations", depth="unit")
def test_an_envelope_grounding_needs_its_observer() -> None:
    report = envelope_report(
        [
            {"test": "T.a", "claim": "c", "result": "passed", "grounding": "grounded"},
            {
                "test": "T.b",
                "claim": "c",
                "depth": "unit",
                "result": "passed",
                "grounding": "grounded",
                "observer": {"tool": "agent"},
            },
        ]
    )
    assert report is not None and report.tests is not None
    a, b = report.tests
    assert a.citations[0].grounding is None
    assert b.citations[0].grounding == "grounded" and b.citations[0].observer == {"tool": "agent"}

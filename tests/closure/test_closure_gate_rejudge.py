"""``gate`` judges a receipt's recorded citations by the claim policy of now."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from prove_helpers import make_change, make_repo

from changeloop.gate.rejudge import rejudged
from changeloop.model import Plan
from changeloop.plan import build_plan
from changeloop.workspace.discovery import find_change

EVIDENCE = """\
version: 3
claims:
  shape: {requires: [test], archetype: structural}
  listed: {requires: [test]}
"""
EXECUTION = """\
version: 1
providers:
  test: {adapter: command, command: ["true"], claims: [listed]}
"""
INERT = [{"test": "t::test_shape", "result": "passed", "grounding": "inert"}]


def _plan(tmp_path: Path) -> Plan:
    root = make_repo(tmp_path / "ws", {"a.txt": "a\n"})
    make_change(root, "c", EVIDENCE, EXECUTION)
    return build_plan(root, find_change(root, "c"))


def _flipped(plan: Plan, cid: str, archetype: str) -> Plan:
    claims = dict(plan.evidence.claims)
    claims[cid] = replace(claims[cid], archetype=archetype)  # type: ignore[arg-type]
    return replace(plan, evidence=replace(plan.evidence, claims=claims))


def test_an_inert_citation_credits_a_structural_claim_and_not_a_behavioral_one(
    tmp_path: Path,
) -> None:
    plan = _plan(tmp_path)
    marks = {"shape": "credited"}
    assert rejudged(plan, "test", marks, {"shape": INERT}) == {"shape": "credited"}
    behavioral = _flipped(plan, "shape", "behavioral")
    assert rejudged(behavioral, "test", marks, {"shape": INERT}) == {"shape": "uncredited"}


def test_a_failed_citation_never_credits(tmp_path: Path) -> None:
    plan = _plan(tmp_path)
    failed = [{**INERT[0], "result": "failed"}]
    assert rejudged(plan, "test", {"shape": "credited"}, {"shape": failed}) == {
        "shape": "uncredited"
    }


def test_listing_and_other_marks_are_left_to_the_verdict(tmp_path: Path) -> None:
    plan = _flipped(_plan(tmp_path), "listed", "structural")
    grounded = [{**INERT[0], "grounding": "grounded"}]
    marks = {"listed": "credited", "shape": "failed", "gone": "credited"}
    citations = {"listed": grounded, "gone": grounded}
    assert rejudged(plan, "test", marks, citations) == marks

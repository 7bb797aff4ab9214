"""The mutation adapter's judgement alone (mutation.judge): a pure function of its jobs'
results, checked on hand-made JobResults against a real plan's provider."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime
from pathlib import Path

import pytest
from config_helpers import plan_for

from changeloop.executors.job import JobResult
from changeloop.model import Provider
from changeloop.mutation.judge import ClaimRuns, MutantRun, baseline_failure, fate, judge
from changeloop.mutation.mutants import mutants_of

EVIDENCE = """\
version: 3
claims:
  label: {statement: Labels numbers., requires: [mutation]}
  total: {statement: Adds., requires: [mutation]}
"""
EXECUTION = """\
version: 1
providers:
  mutation:
    adapter: mutation
    command: [python3, -m, pytest, -q]
    claims: [label, total]
"""
SOURCE = 'def create_label(n):\n    if n > 0:\n        return "positive"\n    return "other"\n'
MUTANTS = mutants_of(SOURCE, "pkg/api.py", {"create_label"})


@pytest.fixture
def provider(tmp_path: Path) -> Provider:
    plan = plan_for(tmp_path / "ws", evidence=EVIDENCE, execution=EXECUTION)
    return plan.providers["mutation"]


def result(
    exit_code: int | None, *, timed_out: bool = False, spawn: str | None = None
) -> JobResult:
    now = datetime(2026, 1, 1, tzinfo=UTC)
    return JobResult(
        argv=("python3", "-m", "pytest"),
        exit_code=exit_code,
        timed_out=timed_out,
        spawn_error=spawn,
        duration_ms=5,
        log_path=Path("m.log"),
        stdout_path=Path("m.out"),
        log_sha256="0" * 64,
        stdout_tail="",
        stderr_tail="",
        log_tail="",
        started=now,
        finished=now,
    )


def runs(claim: str, *results: JobResult | None) -> ClaimRuns:
    return ClaimRuns(claim, ("tests/test_api.py::test_a",), tuple(map(MutantRun, MUTANTS, results)))


def test_fate_of_each_exit() -> None:
    assert fate(result(1)) == "killed"
    assert fate(result(None, timed_out=True)) == "killed"
    assert fate(result(0)) == "survived"
    for exit_code in (2, 4, 5, None):  # import/collection error, usage, no tests, no start
        assert fate(result(exit_code)) == "skipped"
    assert fate(None) == "skipped"  # did not compile: never ran


def test_score_informs_without_threshold(provider: Provider) -> None:
    [outcome] = judge(
        provider, [runs("label", result(1), result(0), result(2), None), runs("total")]
    )
    assert outcome.mutation == {
        "label": {"total": 2, "killed": 1},
        "total": {"total": 0, "killed": 0},
    }
    # total 0 for one claim: inconclusive, nothing credited
    assert outcome.status == "inconclusive"
    assert outcome.reason == "no mutant was scored for claim(s) total (total: 0)"
    assert dict(outcome.claims) == {"label": "uncredited", "total": "uncredited"}
    assert outcome.details["skipped"] == {"label": 2, "total": 0}
    assert outcome.details["survivors"] == {"label": [f"pkg/api.py::{MUTANTS[1].description}"]}
    assert [f.severity for f in outcome.findings] == ["info", "warning"]
    assert outcome.findings[0].message == (
        "claim label: 1 of 2 mutant(s) killed by 1 citing test(s); "
        "2 mutant(s) did not import (skipped)"
    )
    [both] = judge(provider, [runs("label", result(1), result(0)), runs("total", result(1))])
    assert (both.status, both.reason) == ("pass", None)
    assert dict(both.claims) == {"label": "credited", "total": "credited"}


def test_threshold_fails_a_claim_below(provider: Provider) -> None:
    gated = dataclasses.replace(provider, threshold=0.8)
    [outcome] = judge(gated, [runs("label", result(1), result(0)), runs("total", result(1))])
    assert outcome.status == "fail"
    assert outcome.reason == "claim label killed 1 of 2 mutants, below threshold 0.8"
    assert dict(outcome.claims) == {"label": "failed", "total": "uncredited"}
    [passed] = judge(gated, [runs("label", result(1)), runs("total", result(None, timed_out=True))])
    assert passed.status == "pass"


def test_a_failing_traced_run_fails_before_any_mutation(provider: Provider) -> None:
    assert baseline_failure(provider, result(0)) is None
    [failed] = baseline_failure(provider, result(1)) or []
    assert (failed.status, failed.reason) == (
        "fail",
        "the tests fail before any mutation (exited 1)",
    )
    [late] = baseline_failure(provider, result(None, timed_out=True)) or []
    assert late.reason == "the tests fail before any mutation (timed out)"
    [absent] = baseline_failure(provider, result(None, spawn="no such file")) or []
    assert absent.reason == "the tests fail before any mutation (no such file)"

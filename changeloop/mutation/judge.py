"""The mutation adapter's judgement: a pure function of its jobs' results (DESIGN.md §9, §11).

Example::

    fate(result)                       # "killed" | "survived" | "skipped"
    judge(provider, [ClaimRuns("order-total", tests, runs)])   # -> [Outcome]

The adapter runs many jobs, each chosen from the one before (the traced run
says which mutants exist), so the engine's single-job ``read(job, result)``
cannot express it; ``run`` does the I/O and hands every result here. A
failing run kills a mutant (a timeout too); exit 0 means it survived; any
other exit (collection or import error, usage, no tests) means the mutant does
not import: skipped, not scored. ``total: 0`` is ``inconclusive``; without
``threshold`` the receipt passes and informs; with it, a claim scoring below
fails the receipt.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from changeloop.executors.job import JobResult
from changeloop.model import ClaimMark, Provider, Status
from changeloop.mutation.mutants import Mutant
from changeloop.outcome import Finding, Observer, Outcome

ADAPTER = "mutation"  # the adapter's NAME (providers/mutation.py)
MAX_SURVIVORS_SHOWN = 20
Fate = Literal["killed", "survived", "skipped"]


@dataclass(frozen=True)
class MutantRun:
    """One mutant and its run against the claim's citing tests (None: it never ran)."""

    mutant: Mutant
    result: JobResult | None


@dataclass(frozen=True)
class ClaimRuns:
    """Everything run for one claim: its citing tests and one run per mutant."""

    claim: str
    tests: tuple[str, ...]
    runs: tuple[MutantRun, ...]


def fate(result: JobResult | None) -> Fate:
    """``killed`` | ``survived`` | ``skipped`` (the mutant does not import, or never ran)."""
    if result is None:
        return "skipped"
    if result.timed_out or result.exit_code == 1:
        return "killed"
    if result.exit_code == 0:
        return "survived"
    return "skipped"  # 2: interrupted (import/collection error), 4: usage, 5: no tests


def outcome(provider: Provider, status: Status, reason: str | None, **extra: Any) -> list[Outcome]:
    """The adapter's one receipt; claims it does not mark stay ``uncredited``."""
    marks: dict[str, ClaimMark] = dict.fromkeys(provider.claims, "uncredited")
    marks.update(extra.pop("claims", {}))
    return [
        Outcome(
            capability=provider.capability,
            status=status,
            reason=reason,
            claims=marks,
            observer=Observer(adapter=ADAPTER, tool="pytest"),
            command=provider.command,
            **extra,
        )
    ]


def baseline_failure(provider: Provider, base: JobResult) -> list[Outcome] | None:
    """The receipt when the traced run itself failed (nothing to mutate against), else None."""
    if base.spawn_error is None and not base.timed_out and base.exit_code == 0:
        return None
    why = base.spawn_error or ("timed out" if base.timed_out else f"exited {base.exit_code}")
    return outcome(
        provider, "fail", f"the tests fail before any mutation ({why})", exit_code=base.exit_code
    )


def judge(provider: Provider, claims: Sequence[ClaimRuns]) -> list[Outcome]:
    """The receipt: per claim ``{total, killed}``, survivors, skipped counts, threshold."""
    scores: dict[str, dict[str, int]] = {}
    findings: list[Finding] = []
    survivors: dict[str, list[str]] = {}
    skipped: dict[str, int] = {}
    for runs in claims:
        total = killed = dropped = 0
        for run in runs.runs:
            verdict = fate(run.result)
            if verdict == "skipped":
                dropped += 1
                continue
            total += 1
            if verdict == "killed":
                killed += 1
            else:
                name = f"{run.mutant.file}::{run.mutant.description}"
                survivors.setdefault(runs.claim, []).append(name)
        scores[runs.claim] = {"total": total, "killed": killed}
        skipped[runs.claim] = dropped
        findings.append(score_finding(runs.claim, total, killed, dropped, len(runs.tests)))
    status, reason, marks = _decide(scores, provider.threshold)
    details = {
        "threshold": provider.threshold,
        "survivors": {c: names[:MAX_SURVIVORS_SHOWN] for c, names in survivors.items()},
        "skipped": skipped,
    }
    return outcome(
        provider, status, reason, claims=marks, mutation=scores, findings=tuple(findings),
        details=details, exit_code=0,
    )  # fmt: skip


def _decide(
    scores: Mapping[str, Mapping[str, int]], threshold: float | None
) -> tuple[Status, str | None, dict[str, ClaimMark]]:
    """Status, reason and claim marks: below the threshold fails, an empty score is
    inconclusive, else every scored claim is credited."""
    empty = [c for c, s in scores.items() if s["total"] == 0]
    below = [
        c
        for c, s in scores.items()
        if threshold is not None and s["total"] and s["killed"] / s["total"] < threshold
    ]
    if below:
        reason = ", ".join(
            f"claim {c} killed {scores[c]['killed']} of {scores[c]['total']} mutants" for c in below
        )
        return "fail", f"{reason}, below threshold {threshold}", dict.fromkeys(below, "failed")
    if empty:
        return (
            "inconclusive",
            f"no mutant was scored for claim(s) {', '.join(empty)} (total: 0)",
            {},
        )
    return "pass", None, {c: "credited" for c, s in scores.items() if s["total"]}


def score_finding(claim: str, total: int, killed: int, dropped: int, tests: int) -> Finding:
    """A claim's score in words for the receipt's findings (a warning when nothing scored)."""
    skipped = f"; {dropped} mutant(s) did not import (skipped)" if dropped else ""
    if total == 0:
        message = (
            f"claim {claim}: no mutant could be scored ({tests} citing test(s); their traced run "
            f"ran no production function under an entry point{skipped})"
        )
        return Finding(kind="mutation-score", message=message, severity="warning")
    message = f"claim {claim}: {killed} of {total} mutant(s) killed by {tests} citing test(s)"
    return Finding(kind="mutation-score", message=message + skipped, severity="info")

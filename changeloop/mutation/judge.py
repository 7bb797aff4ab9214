"""The mutation adapter's judgement: a pure function of what each mutant's run said.

Example::

    fate(result)                       # "killed" | "survived" | "skipped"
    judge(provider, [ClaimRuns("order-total", tests, runs)])   # -> [Outcome]

The adapter runs many jobs, each chosen from the one before (the traced run
says which mutants exist and which tests reach them), so the engine's
single-job ``read(job, result)`` cannot express it; ``run`` does the I/O and
hands every mutant's fate here. A failing run kills a mutant (a timeout too);
a passing one means it survived; a mutant that does not compile or import is
skipped, not scored. ``total: 0`` is ``inconclusive``; without ``threshold``
the receipt passes and informs; with it, a claim scoring below fails the
receipt (the verdict weighs that receipt only where the claim or the change
requires ``mutation``: a score is advisory otherwise).

Survivors are named so a reader can act: ``{operator, mutation, where, file,
line, reached?}`` — ``where`` is ``module:function`` or ``module:Class#method``;
``reached`` is false where the traces show the mutated line never ran under
the tests that reach the function, true where it ran and the expression runs
whenever its line does, and left out where that cannot be told. A claim whose
survivors outnumber its shortfall (``total - killed``) is refused: the score
and the names cannot both be right.
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
MAX_SURVIVORS_SHOWN = 50
Fate = Literal["killed", "survived", "skipped"]


@dataclass(frozen=True)
class MutantRun:
    """One mutant, the tests it ran against, and what happened."""

    mutant: Mutant
    fate: Fate
    tests: tuple[str, ...] = ()
    reached: bool | None = None  # its line ran under those tests (None: cannot be told)
    why: str | None = None  # the killing test, or why it was skipped


@dataclass(frozen=True)
class ClaimRuns:
    """Everything run for one claim: its citing tests and one run per mutant."""

    claim: str
    tests: tuple[str, ...]
    runs: tuple[MutantRun, ...]


def fate(result: JobResult | None) -> Fate:
    """``killed`` | ``survived`` | ``skipped`` of a one-pytest-per-mutant run."""
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


def survivor(run: MutantRun) -> dict[str, Any]:
    """A surviving mutant, named so a reader can act on it."""
    mutant = run.mutant
    out: dict[str, Any] = {
        "operator": mutant.kind,
        "mutation": mutant.change,
        "where": mutant.where,
        "file": mutant.file,
        "line": mutant.line,
    }
    if run.reached is not None:
        out["reached"] = run.reached
    return out


def inconsistent(
    scores: Mapping[str, Mapping[str, int]], survivors: Mapping[str, Sequence[object]]
) -> list[str]:
    """Claims that name more survivors than their shortfall (``total - killed``)."""
    out = []
    for claim, named in survivors.items():
        score = scores.get(claim)
        shortfall = (score["total"] - score["killed"]) if score else 0
        if len(named) > shortfall:
            out.append(claim)
    return out


def judge(provider: Provider, claims: Sequence[ClaimRuns]) -> list[Outcome]:
    """The receipt: per claim ``{total, killed}``, survivors, skipped counts, threshold."""
    scores: dict[str, dict[str, int]] = {}
    findings: list[Finding] = []
    survivors: dict[str, list[dict[str, Any]]] = {}
    skipped: dict[str, int] = {}
    for runs in claims:
        total = killed = dropped = 0
        for run in runs.runs:
            if run.fate == "skipped":
                dropped += 1
                continue
            total += 1
            if run.fate == "killed":
                killed += 1
            else:
                survivors.setdefault(runs.claim, []).append(survivor(run))
        scores[runs.claim] = {"total": total, "killed": killed}
        skipped[runs.claim] = dropped
        findings.append(score_finding(runs.claim, total, killed, dropped, len(runs.tests)))
    details = {
        "threshold": provider.threshold,
        "survivors": {c: named[:MAX_SURVIVORS_SHOWN] for c, named in survivors.items()},
        "skipped": skipped,
    }
    refused = inconsistent(scores, details["survivors"])  # type: ignore[arg-type]
    if refused:
        message = (
            f"claim(s) {', '.join(refused)} name more surviving mutants than total - killed: the "
            "score and the survivors cannot both be right"
        )
        finding = Finding(kind="mutation-inconsistent", message=message, severity="error")
        return outcome(
            provider, "inconclusive", message, mutation=scores, findings=(finding,),
            details=details, exit_code=0,
        )  # fmt: skip
    status, reason, marks = _decide(scores, provider.threshold)
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
    skipped = f"; {dropped} mutant(s) did not compile or import (skipped)" if dropped else ""
    if total == 0:
        message = (
            f"claim {claim}: no mutant could be scored ({tests} citing test(s); their traced run "
            f"ran no production function under an entry point{skipped})"
        )
        return Finding(kind="mutation-score", message=message, severity="warning")
    message = f"claim {claim}: {killed} of {total} mutant(s) killed by {tests} citing test(s)"
    return Finding(kind="mutation-score", message=message + skipped, severity="info")

"""Judge what reading found: pure, no file is read and nothing is verified here.

Example::

    result = judge(plan, reading)          # a GateResult
    result.claims["order-total"].reasons   # why it is not proven, with codes

The newest receipt per (provider, capability) goes through the one verdict
(:func:`changeloop.verdict.decide`): no second set of rules lives here. The
reasons add what gate alone knows: which set-aside envelope may have spoken
for a claim or a ``requires`` entry. An envelope that does not verify fails
the gate closed.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from changeloop.gate.records import (
    ClaimGate,
    GateResult,
    Kept,
    Reading,
    Reason,
    ReasonCode,
    SetAside,
)
from changeloop.model import Claim, Plan
from changeloop.signing.verify import parse_time
from changeloop.verdict import ClaimVerdict, ReceiptView, Verdict, decide


def judge(plan: Plan, reading: Reading) -> GateResult:
    """The gate's result over ``reading``: the verdict of its newest receipts, with reasons."""
    current = newest(reading.kept)
    verdict = decide(plan, [k.view for k in current])
    aside = reading.set_aside
    claims = {cid: claim_gate(plan, cid, current, aside, verdict) for cid in verdict.claims}
    requires, reasons = requires_gate(plan, verdict, aside)
    return GateResult(
        plan=plan,
        verdict=verdict,
        claims=claims,
        requires=requires,
        reasons=tuple(reasons),
        read=reading.read,
        kept=tuple(current),
        set_aside=aside,
        trees=reading.trees,
    )


def newest(kept: Sequence[Kept]) -> list[Kept]:
    """The newest receipt per (provider, capability): a newer FAILED beats an older PASSED."""
    best: dict[tuple[str, str], Kept] = {}
    for k in kept:
        key = (k.view.provider, k.view.capability)
        old = best.get(key)
        if old is None or parse_time(str(k.verified.extension["finishedOn"])) > parse_time(
            str(old.verified.extension["finishedOn"])
        ):
            best[key] = k
    return list(best.values())


def speaks_for(s: SetAside, capability: str, repository: str | None) -> bool:
    """Whether a set-aside envelope may have spoken for ``capability`` (in ``repository``)."""
    if s.capability is None:
        return True  # an unreadable envelope might have been about anything
    if s.capability != capability:
        return False
    return repository is None or not s.repositories or repository in s.repositories


def single_capability(
    plan: Plan, claim: Claim, capability: str, views: Sequence[ReceiptView]
) -> ClaimVerdict:
    """The one verdict over a copy of ``claim`` requiring ``capability`` alone.

    Gate's per-capability reasons and the report's matrix cells both ask this.
    """
    single = dataclasses.replace(claim, requires=(capability,))
    evidence = dataclasses.replace(plan.evidence, claims={claim.id: single}, requires={})
    return decide(dataclasses.replace(plan, evidence=evidence), views).claims[claim.id]


def claim_gate(
    plan: Plan, cid: str, kept: Sequence[Kept], aside: Sequence[SetAside], verdict: Verdict
) -> ClaimGate:
    """Per required capability, the one verdict over a single-capability copy of the claim."""
    claim = plan.evidence.claims[cid]
    whole = verdict.claims[cid]
    reasons: list[Reason] = []
    views = [k.view for k in kept]
    for capability in claim.requires:
        part = single_capability(plan, claim, capability, views)
        if part.status == "proven":
            continue
        if part.status in ("failed", "blocked", "inconclusive"):
            # A blocked claim's receipt is a failed one: the code says so, the status says whose
            code: ReasonCode = "inconclusive" if part.status == "inconclusive" else "failed"
            reasons += [Reason(code, text) for text in part.reasons]
            continue
        why = [s for s in aside if speaks_for(s, capability, claim.repository)]
        if why:
            reasons += [Reason(s.code, s.message) for s in why]
        else:
            reasons += [Reason("no-receipt", text) for text in part.reasons]
    if not claim.requires:
        reasons += [Reason("no-receipt", text) for text in whole.reasons]
    status = whole.status
    # An envelope that does not verify fails the gate closed; a claim it may have spoken
    # for is not called proven beside it.
    for s in aside:
        if not (s.fatal and s.code == "unverified"):
            continue
        reason = Reason(s.code, s.message)
        if reason not in reasons and any(
            speaks_for(s, c, claim.repository) for c in claim.requires
        ):
            reasons.append(reason)
            if status == "proven":
                status = "inconclusive"
    return ClaimGate(status=status, reasons=tuple(reasons))


def requires_gate(
    plan: Plan, verdict: Verdict, aside: Sequence[SetAside]
) -> tuple[dict[str, dict[str, str]], list[Reason]]:
    """The change's ``requires`` table and the change-level reasons."""
    reasons: list[Reason] = []
    for capability, per_repo in verdict.requires.items():
        for repo, status in per_repo.items():
            if status == "pass":
                continue
            if status == "missing":
                why = [s for s in aside if speaks_for(s, capability, repo)]
                if why:  # one envelope spanning several repositories is said once
                    reasons += [
                        r for r in (Reason(s.code, s.message) for s in why) if r not in reasons
                    ]
                else:
                    reasons.append(
                        Reason("no-receipt", f"requires {capability} in {repo}: no receipt")
                    )
            else:
                code: ReasonCode = "failed" if status == "fail" else "inconclusive"
                reasons.append(Reason(code, f"requires {capability} in {repo}: {status}"))
    for s in aside:
        if s.code == "unverified" and s.fatal and Reason(s.code, s.message) not in reasons:
            reasons.append(Reason(s.code, s.message))
    if not plan.evidence.claims and not plan.evidence.requires:
        reasons.append(
            Reason("no-receipt", "the change declares no claims and no requires: nothing to prove")
        )
    requires: dict[str, dict[str, str]] = {
        cap: {repo: str(status) for repo, status in per.items()}
        for cap, per in verdict.requires.items()
    }
    return requires, reasons

"""Claim and change verdicts from receipts (DESIGN.md §7).

A ``pass`` receipt credits a claim only when it says so (the provider lists the
claim, or a test that passed in that very run cites it). A green suite that
names no claim leaves the claims that needed it *inconclusive*.

Per claim and required capability, the receipts that speak about the claim
are the *relevant* ones: those that mark the claim at all, or — when no receipt
of that capability mentions the claim — every receipt of that capability in the
claim's scope. Then: a relevant ``fail`` ⇒ failed; else a crediting ``pass`` ⇒
proven; else a relevant receipt ⇒ inconclusive; else ⇒ unproven.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from changeloop.model import ClaimMark, Plan, Status

ClaimStatus = Literal["proven", "failed", "inconclusive", "unproven"]
RequireStatus = Literal["pass", "fail", "inconclusive", "missing"]
_CLAIM_RANK: dict[ClaimStatus, int] = {"proven": 0, "unproven": 1, "inconclusive": 2, "failed": 3}


@dataclass(frozen=True)
class ReceiptView:
    """What the verdict needs to know about one receipt."""

    provider: str
    capability: str
    status: Status
    repositories: tuple[str, ...]
    reason: str | None = None
    claims: Mapping[str, ClaimMark] = field(default_factory=dict)
    input_mode: str | None = None


@dataclass(frozen=True)
class ClaimVerdict:
    status: ClaimStatus
    reasons: tuple[str, ...]


@dataclass(frozen=True)
class Verdict:
    proven: bool
    claims: Mapping[str, ClaimVerdict]
    requires: Mapping[str, Mapping[str, RequireStatus]]
    reasons: tuple[str, ...]

    @property
    def status(self) -> str:
        return "proven" if self.proven else "not-proven"


def decide(
    plan: Plan,
    receipts: Sequence[ReceiptView],
    notes: Mapping[str, str] | None = None,
) -> Verdict:
    """``notes``: capability -> why no receipt exists (e.g. no external receipt supplied)."""
    notes = notes or {}
    claims = {
        cid: _claim_verdict(cid, plan, receipts, notes) for cid in sorted(plan.evidence.claims)
    }
    requires = _requires(plan, receipts)
    reasons: list[str] = []
    if not plan.evidence.claims and not plan.evidence.requires:
        reasons.append("the change declares no claims and no requires: nothing to prove")
    for cid, verdict in claims.items():
        if verdict.status != "proven":
            reasons.append(f"claim {cid} is {verdict.status}")
    for capability, per_repo in requires.items():
        for repo, status in per_repo.items():
            if status != "pass":
                reasons.append(f"requires {capability} in {repo}: {status}")
    return Verdict(proven=not reasons, claims=claims, requires=requires, reasons=tuple(reasons))


def _claim_verdict(
    cid: str, plan: Plan, receipts: Sequence[ReceiptView], notes: Mapping[str, str]
) -> ClaimVerdict:
    claim = plan.evidence.claims[cid]
    if not claim.requires:
        return ClaimVerdict("unproven", (f"claim {cid} requires no capability",))
    worst: ClaimStatus = "proven"
    reasons: list[str] = []
    for capability in claim.requires:
        status, why = _claim_capability(cid, capability, claim.repository, receipts, notes)
        if claim.input_mode == "os-input" and status == "proven":
            status, why = _os_input(cid, capability, claim.repository, receipts)
        reasons.extend(why)
        if _CLAIM_RANK[status] > _CLAIM_RANK[worst]:
            worst = status
    return ClaimVerdict(worst, tuple(reasons))


def _in_scope(receipt: ReceiptView, capability: str, repository: str | None) -> bool:
    if receipt.capability != capability:
        return False
    return repository is None or repository in receipt.repositories


def _claim_capability(
    cid: str,
    capability: str,
    repository: str | None,
    receipts: Sequence[ReceiptView],
    notes: Mapping[str, str],
) -> tuple[ClaimStatus, list[str]]:
    scoped = [r for r in receipts if _in_scope(r, capability, repository)]
    mentioning = [r for r in scoped if cid in r.claims]
    relevant = mentioning or scoped
    failed = [r for r in relevant if r.status == "fail"]
    if failed:
        return "failed", [f"{capability}: {_describe(r)}" for r in failed]
    credited = [r for r in relevant if r.status == "pass" and r.claims.get(cid) == "credited"]
    if credited:
        return "proven", []
    if relevant:
        why = []
        for r in relevant:
            if r.status == "pass":
                why.append(
                    f"{capability}: provider {r.provider} passed but nothing in its run cites "
                    f"claim {cid}"
                )
            else:
                why.append(f"{capability}: {_describe(r)}")
        return "inconclusive", why
    note = notes.get(capability)
    scope = f" in {repository}" if repository else ""
    return "unproven", [note or f"{capability}: no receipt{scope}"]


def _os_input(
    cid: str, capability: str, repository: str | None, receipts: Sequence[ReceiptView]
) -> tuple[ClaimStatus, list[str]]:
    """A claim needing real OS input is never credited by browser automation alone."""
    for r in receipts:
        if (
            _in_scope(r, capability, repository)
            and r.status == "pass"
            and r.claims.get(cid) == "credited"
            and r.input_mode in ("os-input", "both")
        ):
            return "proven", []
    return "inconclusive", [
        f"{capability}: claim {cid} needs os-input evidence; browser automation does not satisfy it"
    ]


def _describe(r: ReceiptView) -> str:
    reason = f": {r.reason}" if r.reason else ""
    return f"provider {r.provider} {r.status}{reason}"


def _requires(plan: Plan, receipts: Sequence[ReceiptView]) -> dict[str, dict[str, RequireStatus]]:
    out: dict[str, dict[str, RequireStatus]] = {}
    for capability in sorted(plan.evidence.requires):
        repos = plan.evidence.requires[capability] or tuple(sorted(plan.repositories))
        per_repo: dict[str, RequireStatus] = {}
        for repo in repos:
            mine = [r for r in receipts if r.capability == capability and repo in r.repositories]
            if not mine:
                per_repo[repo] = "missing"
            elif any(r.status == "fail" for r in mine):
                per_repo[repo] = "fail"
            elif all(r.status == "pass" for r in mine):
                per_repo[repo] = "pass"
            else:
                per_repo[repo] = "inconclusive"
        out[capability] = per_repo
    return out

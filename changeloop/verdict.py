"""Claim and change verdicts from receipts (docs/verbs/prove.md).

A ``pass`` receipt credits a claim only when it says so (the provider lists the
claim, or a test that passed in that very run cites it). A green suite that
names no claim leaves the claims that needed it *inconclusive*.

Per claim and required capability, the receipts that speak about the claim
are the *relevant* ones: those that mark the claim at all, or — when no receipt
of that capability mentions the claim — every receipt of that capability in the
claim's scope. Then: a relevant ``fail`` ⇒ failed (or *blocked*, below); else a
crediting ``pass`` ⇒ proven; else a relevant receipt ⇒ inconclusive; else ⇒ unproven.

A claim is **blocked**, not failed, when every failing receipt that speaks for it
failed elsewhere: the claim's own citing tests all passed in that run, and the
run failed on other tests (or before any). It is still not proven — the verdict
is as strict — but a reviewer sees which claim is actually broken.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from changeloop.citing import framework_of, how_to_cite
from changeloop.model import Archetype, Claim, ClaimMark, Plan, Provider, Status

ClaimStatus = Literal["proven", "failed", "blocked", "inconclusive", "unproven"]
RequireStatus = Literal["pass", "fail", "inconclusive", "missing"]
_CLAIM_RANK: dict[ClaimStatus, int] = {
    "proven": 0,
    "unproven": 1,
    "inconclusive": 2,
    "blocked": 3,
    "failed": 4,
}
MAX_NAMED = 3  # failing tests a reason names; the rest are counted


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
    # claim -> its citations in this receipt, JSON shape {test, depth, ref, result, grounding}
    citations: Mapping[str, Sequence[Mapping[str, object]]] = field(default_factory=dict)
    # (test, one-line message) of each test that failed in the run, in the report's order
    failures: tuple[tuple[str, str], ...] = ()


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
        status, why = _claim_capability(plan, cid, capability, claim.repository, receipts, notes)
        status, why = _grounding_rule(
            plan, cid, capability=capability, status=status, why=why, receipts=receipts
        )
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


def _how_to_cite(plan: Plan, provider: str, cid: str) -> str:
    planned = plan.providers.get(provider)
    if planned is None:
        return how_to_cite("listing", cid)
    command = planned.command or ()
    return how_to_cite(framework_of(planned.adapter, command, planned.format), cid)


def _claim_capability(  # noqa: PLR0917 (one caller, the verdict's inputs)
    plan: Plan,
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
        if all(_blocked(cid, r) for r in failed):
            return "blocked", [f"{capability}: {blocked_message(cid, r)}" for r in failed]
        return "failed", [f"{capability}: {_failed_message(cid, r)}" for r in failed]
    credited = [r for r in relevant if r.status == "pass" and r.claims.get(cid) == "credited"]
    if credited:
        return "proven", []
    if relevant:
        why = []
        for r in relevant:
            if r.status == "pass":
                why.append(
                    f"{capability}: provider {r.provider} passed but nothing in its run cites "
                    f"claim {cid}; {_how_to_cite(plan, r.provider, cid)}"
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


def _own_citations(cid: str, r: ReceiptView) -> list[Mapping[str, object]]:
    return [c for c in r.citations.get(cid, ()) if isinstance(c, Mapping)]


def _blocked(cid: str, r: ReceiptView) -> bool:
    """The claim's own citing tests all passed in this failing run (it failed elsewhere)."""
    own = _own_citations(cid, r)
    return (
        r.claims.get(cid) != "failed"
        and bool(own)
        and all(c.get("result") == "passed" for c in own)
    )


def short_test(test: str) -> str:
    """A test's own name (``test_fee_minimum``), without its file or class."""
    return test.rsplit("::", 1)[-1]


def _cited_by(test: str, r: ReceiptView) -> list[str]:
    return sorted(
        claim
        for claim, cites in r.citations.items()
        if any(isinstance(c, Mapping) and c.get("test") == test for c in cites)
    )


def blocked_message(cid: str, r: ReceiptView) -> str:
    """``its 4 tests passed; the run failed on test_fee_minimum (claim fees)``."""
    n = len(_own_citations(cid, r))
    own = f"its {n} tests passed" if n != 1 else "its test passed"
    named = []
    for test, _ in r.failures[:MAX_NAMED]:
        claims = _cited_by(test, r)
        which = f" (claim {', '.join(claims)})" if claims else ""
        named.append(f"{short_test(test)}{which}")
    if named:
        more = f" and {len(r.failures) - MAX_NAMED} more" if len(r.failures) > MAX_NAMED else ""
        return f"{own}; the run failed on {', '.join(named)}{more} (provider {r.provider})"
    why = f": {r.reason}" if r.reason else ""
    return f"{own}; the run of provider {r.provider} failed{why}"


def _failed_message(cid: str, r: ReceiptView) -> str:
    """The claim's own failing tests with their one-line assertion, else the run's reason."""
    own = {str(c.get("test")) for c in _own_citations(cid, r) if c.get("result") != "passed"}
    mine = [(t, m) for t, m in r.failures if t in own]
    if not mine:
        return _describe(r)
    shown = [f"{short_test(t)} — {m}" if m else short_test(t) for t, m in mine[:MAX_NAMED]]
    more = f" (+{len(mine) - MAX_NAMED} more)" if len(mine) > MAX_NAMED else ""
    return f"{'; '.join(shown)}{more} (provider {r.provider})"


def failures_of(
    failed_tests: Sequence[str], findings: Sequence[Mapping[str, object]]
) -> tuple[tuple[str, str], ...]:
    """(test, first line of its failure) for each failed test, from a receipt's
    ``failedTests`` and its ``test-failed`` findings (every reader writes
    ``"<test>: <message>"``)."""
    messages: dict[str, str] = {}
    for f in findings:
        text = f.get("message")
        if f.get("kind") != "test-failed" or not isinstance(text, str):
            continue
        for test in failed_tests:
            if test not in messages and text.startswith(f"{test}: "):
                rest = text[len(test) + 2 :].strip()
                messages[test] = next((ln.strip() for ln in rest.splitlines() if ln.strip()), "")
    return tuple((str(t), messages.get(t, "")) for t in failed_tests)


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


# -- grounding (docs/grounding.md) -------------------------------------------------------
# The crediting rule, in one place: adapters that read citations call
# ``citation_credits``/``listing_blocked`` to mark their receipts, and ``decide``
# applies the listing rule to adapters that can only credit by listing (command).

_CREDITING: dict[Archetype, frozenset[str]] = {
    "behavioral": frozenset({"grounded", "not-checked"}),
    "structural": frozenset({"inert"}),  # read the artifact, ran none of it; untouched never
}
LISTING_ONLY_ADAPTERS = frozenset({"command"})  # credit only through `claims:`
GROUNDED_REPOSITORY_ADAPTERS = frozenset({"command", "test-discovery"})


def citation_credits(
    archetype: Archetype, grounding: str | None, *, entry_points: bool = False
) -> bool:
    """Whether a passing citation with this grounding credits a claim of this archetype.

    No grounding recorded (a runner without a tracer) reads as ``not-checked``,
    which credits a behavioral claim only where the repository declares no entry
    points: under declared ones an unobserved citation is never credit.
    """
    value = grounding or "not-checked"
    if value == "not-checked" and entry_points:
        return False
    return value in _CREDITING[archetype]


def entry_points_declared(plan: Plan, repository: str | None) -> bool:
    repo = plan.repositories.get(repository or "")
    return bool(repo is not None and repo.entry_points)


def listing_blocked(plan: Plan, claim: Claim, provider: Provider) -> bool:
    """Listing cannot bypass grounding: once the provider's repository declares entry
    points, a behavioral claim is not credited by ``claims:`` alone."""
    return (
        claim.archetype == "behavioral"
        and provider.adapter in GROUNDED_REPOSITORY_ADAPTERS
        and entry_points_declared(plan, provider.repository)
    )


def listing_message(cid: str, provider: str) -> str:
    return (
        f"claim {cid} is listed in provider {provider}'s claims but no test cites it; its "
        "repository declares entry points, so a behavioral claim needs a grounded citation"
    )


def uncredited_message(cid: str, archetype: Archetype, tests: Sequence[tuple[str, str]]) -> str:
    """Why passing citations did not credit a claim, naming the tests."""
    named = ", ".join(f"{test} ({grounding})" for test, grounding in tests)
    need = (
        "grounded (or, where no entry points are declared, not-checked)"
        if archetype == "behavioral"
        else "inert (it read the production artifact and ran none of it)"
    )
    return f"claim {cid} ({archetype}) needs a {need} citation; passing citations: {named}"


def _grounding_rule(
    plan: Plan,
    cid: str,
    *,
    capability: str,
    status: ClaimStatus,
    why: list[str],
    receipts: Sequence[ReceiptView],
) -> tuple[ClaimStatus, list[str]]:
    """Apply the grounding rule (docs/grounding.md) on top of the marks: listing-only
    credit is refused where entry points
    are declared, and an uncredited claim with passing citations says ``ungrounded``."""
    claim = plan.evidence.claims[cid]
    scoped = [r for r in receipts if _in_scope(r, capability, claim.repository)]
    if status == "proven":
        crediting = [r for r in scoped if r.status == "pass" and r.claims.get(cid) == "credited"]
        if crediting and all(_listing_blocked_receipt(plan, cid, r) for r in crediting):
            return "inconclusive", [
                f"{capability}: ungrounded: {listing_message(cid, r.provider)}" for r in crediting
            ]
        return status, why
    if status != "inconclusive":
        return status, why
    extra = [
        f"{capability}: ungrounded: {_citations_message(plan, cid, r)}"
        for r in scoped
        if r.status == "pass" and r.claims.get(cid) != "credited" and r.citations.get(cid)
    ]
    return status, extra + [w for w in why if "cites claim" not in w] if extra else why


def _listing_blocked_receipt(plan: Plan, cid: str, r: ReceiptView) -> bool:
    provider = plan.providers.get(r.provider)
    claim = plan.evidence.claims.get(cid)
    if provider is None or claim is None or provider.adapter not in LISTING_ONLY_ADAPTERS:
        return False
    if r.citations.get(cid):
        return False  # a custom runner's envelope cited it: its citations were judged instead
    return cid in provider.claims and listing_blocked(plan, claim, provider)


def _citations_message(plan: Plan, cid: str, r: ReceiptView) -> str:
    claim = plan.evidence.claims[cid]
    passed = [
        (str(c.get("test")), str(c.get("grounding") or "not-checked"))
        for c in r.citations.get(cid, ())
        if c.get("result") == "passed"
    ]
    if not passed:
        return f"provider {r.provider} passed but no citation of claim {cid} passed"
    return f"provider {r.provider}: " + uncredited_message(cid, claim.archetype, passed)

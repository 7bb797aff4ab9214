"""Claim and change verdicts (docs/verbs/prove.md) on hand-made receipts."""

from __future__ import annotations

from pathlib import Path

import pytest

from changeloop.model import Claim, Evidence, Plan, Repository
from changeloop.verdict import ReceiptView, decide
from changeloop.workspace.changeref import ChangeRef


def _plan(
    claims: dict[str, Claim],
    requires: dict[str, tuple[str, ...] | None] | None = None,
    repos: tuple[str, ...] = ("self",),
) -> Plan:
    evidence = Evidence(
        path=Path("evidence.yaml"),
        version=3,
        repositories={r: r for r in repos},
        requires=requires or {},
        claims=claims,
    )
    return Plan(
        root=Path("/ws"),
        change=ChangeRef("c", Path("/ws/openspec/changes/c")),
        evidence=evidence,
        execution=None,
        repositories={r: Repository(r, Path(f"/ws/{r}"), r) for r in repos},
        providers={},
        services={},
    )


def r(
    capability: str,
    status: str,
    claims: dict[str, str] | None = None,
    repo: str = "self",
    provider: str = "p",
    input_mode: str | None = None,
) -> ReceiptView:
    return ReceiptView(
        provider=provider,
        capability=capability,
        status=status,  # type: ignore[arg-type]
        repositories=(repo,),
        reason=None if status == "pass" else "why",
        claims=claims or {},  # type: ignore[arg-type]
        input_mode=input_mode,
    )


X = {"x": Claim("x", requires=("test",))}


@pytest.mark.parametrize(
    ("receipts", "status"),
    [
        ([r("test", "pass", {"x": "credited"})], "proven"),
        ([r("test", "pass")], "inconclusive"),  # green suite citing nothing is no evidence
        ([r("test", "fail")], "failed"),
        ([r("test", "inconclusive")], "inconclusive"),
        ([], "unproven"),
        ([r("browser", "pass", {"x": "credited"})], "unproven"),  # wrong capability
        # a failing test citing the claim fails it even when another run credits it
        (
            [
                r("test", "pass", {"x": "credited"}),
                r("test", "fail", {"x": "failed"}, provider="q"),
            ],
            "failed",
        ),
        # an unrelated red suite does not fail a claim another suite credits
        ([r("test", "pass", {"x": "credited"}), r("test", "fail", provider="q")], "proven"),
    ],
)
def test_single_capability(receipts: list[ReceiptView], status: str) -> None:
    verdict = decide(_plan(X), receipts)
    assert verdict.claims["x"].status == status
    assert verdict.proven is (status == "proven")
    if status != "proven":
        assert verdict.claims["x"].reasons


def test_claim_scoped_to_a_repository_counts_only_its_receipts() -> None:
    plan = _plan({"x": Claim("x", requires=("test",), repository="web")}, repos=("web", "api"))
    assert (
        decide(plan, [r("test", "pass", {"x": "credited"}, repo="api")]).claims["x"].status
        == "unproven"
    )
    assert (
        decide(plan, [r("test", "pass", {"x": "credited"}, repo="web")]).claims["x"].status
        == "proven"
    )


def test_every_required_capability_must_credit() -> None:
    plan = _plan({"x": Claim("x", requires=("browser", "accessibility"))})
    only_browser = [r("browser", "pass", {"x": "credited"})]
    assert decide(plan, only_browser).claims["x"].status == "unproven"
    both = [*only_browser, r("accessibility", "pass", {"x": "credited"})]
    assert decide(plan, both).claims["x"].status == "proven"


def test_os_input_claims_are_not_proven_by_browser_automation() -> None:
    plan = _plan({"x": Claim("x", requires=("browser",), input_mode="os-input")})
    automated = [r("browser", "pass", {"x": "credited"}, input_mode="browser-automation")]
    assert decide(plan, automated).claims["x"].status == "inconclusive"
    real = [r("browser", "pass", {"x": "credited"}, input_mode="os-input")]
    assert decide(plan, real).claims["x"].status == "proven"


def test_change_level_requires_each_repository() -> None:
    plan = _plan({}, requires={"test": None, "lint": ("web",)}, repos=("web", "api"))
    verdict = decide(plan, [r("test", "pass", repo="web"), r("lint", "pass", repo="web")])
    assert verdict.requires == {"lint": {"web": "pass"}, "test": {"api": "missing", "web": "pass"}}
    assert not verdict.proven
    verdict = decide(
        plan,
        [
            r("test", "pass", repo="web"),
            r("test", "pass", repo="api"),
            r("lint", "pass", repo="web"),
        ],
    )
    assert verdict.proven


def test_nothing_to_prove_is_not_proven() -> None:
    verdict = decide(_plan({}), [])
    assert not verdict.proven
    assert "nothing to prove" in verdict.reasons[0]


def test_a_note_explains_an_unproven_claim() -> None:
    plan = _plan({"x": Claim("x", requires=("review",))})
    verdict = decide(plan, [], {"review": "review: no external receipt was supplied"})
    assert verdict.claims["x"].reasons == ("review: no external receipt was supplied",)

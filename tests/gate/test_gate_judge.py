"""gate's judging alone (gate.judge): pure over what reading found, so each rule is checked on
hand-made records of kept and set-aside envelopes, against a real plan."""

from __future__ import annotations

from pathlib import Path

import pytest
from config_helpers import plan_for

from changeloop import gate
from changeloop.gate import Kept, ReadEnvelope, Reading, SetAside
from changeloop.model import ClaimMark, Plan, Status
from changeloop.signing.verify import Verified
from changeloop.verdict import ReceiptView

EVIDENCE = """\
version: 3
requires: [lint]
claims:
  greeting: {statement: The app greets., requires: [test]}
  both: {statement: Greets in a browser too., requires: [test, e2e]}
"""
EXECUTION = """\
version: 1
providers:
  unit: {adapter: command, command: [sh, t.sh]}
"""


@pytest.fixture
def plan(tmp_path: Path) -> Plan:
    return plan_for(tmp_path / "ws", evidence=EVIDENCE, execution=EXECUTION)


def envelope(name: str) -> ReadEnvelope:
    return ReadEnvelope(Path(name), name, "0" * 64, "local")


def kept(
    capability: str,
    status: Status,
    finished: str = "2026-01-01T00:00:00Z",
    claims: dict[str, ClaimMark] | None = None,
    provider: str = "unit",
) -> Kept:
    claims = claims if claims is not None else {"greeting": "credited", "both": "credited"}
    verified = Verified(
        id=f"sha256:{capability}{finished}",
        payload=b"{}",
        statement={},
        extension={"finishedOn": finished, "provider": provider, "capability": capability},
        keyid="k",
        result="PASSED" if status == "pass" else "FAILED",
        status=status,
    )
    view = ReceiptView(provider, capability, status, ("self",), claims=claims)
    return Kept(envelope(f"{provider}-{capability}-{finished}.json"), verified, view)


def aside(
    code: gate.ReasonCode,
    capability: str | None,
    *,
    fatal: bool = True,
    repos: tuple[str, ...] = (),
) -> SetAside:
    return SetAside(envelope(f"{code}.json"), code, f"{code} envelope", capability, repos, fatal)


def judged(plan: Plan, *records: Kept | SetAside) -> gate.GateResult:
    keep = tuple(r for r in records if isinstance(r, Kept))
    put = tuple(r for r in records if isinstance(r, SetAside))
    reading = Reading(read=tuple(r.envelope for r in records), kept=keep, set_aside=put)
    return gate.judge(plan, reading)


def codes(result: gate.GateResult, claim: str) -> list[str]:
    return [r.code for r in result.claims[claim].reasons]


def test_a_newer_failure_beats_an_older_pass(plan: Plan) -> None:
    old = kept("test", "pass", "2026-01-01T00:00:00Z")
    new = kept("test", "fail", "2026-01-02T00:00:00Z", claims={"greeting": "failed"})
    for order in ((old, new), (new, old)):
        result = judged(plan, *order)
        assert result.kept == (new,)
        assert result.claims["greeting"].status == "failed"
        assert codes(result, "greeting") == ["failed"]


def test_an_envelope_that_does_not_verify_fails_the_gate_closed(plan: Plan) -> None:
    passing = (kept("test", "pass"), kept("e2e", "pass"), kept("lint", "pass"))
    assert judged(plan, *passing).proven
    result = judged(plan, *passing, aside("unverified", None))
    assert not result.proven
    assert result.claims["greeting"].status == "inconclusive"
    assert codes(result, "greeting") == ["unverified"]
    assert [r.code for r in result.reasons] == ["unverified"]


def test_a_key_out_of_scope_is_ignored_not_fatal(plan: Plan) -> None:
    passing = (kept("test", "pass"), kept("e2e", "pass"), kept("lint", "pass"))
    result = judged(plan, *passing, aside("unverified", "test", fatal=False))
    assert result.proven
    assert result.claims["greeting"].reasons == ()


def test_a_set_aside_receipt_is_the_reason_where_it_spoke(plan: Plan) -> None:
    result = judged(plan, aside("stale-content", "test"), aside("stale-wiring", "lint"))
    assert result.claims["greeting"].status == "unproven"
    assert codes(result, "greeting") == ["stale-content"]
    # e2e: nothing set aside spoke for it, so "no receipt"
    assert codes(result, "both") == ["stale-content", "no-receipt"]
    assert [r.code for r in result.reasons] == ["stale-wiring"]
    assert result.requires == {"lint": {"self": "missing"}}


def test_requires_reasons(plan: Plan) -> None:
    result = judged(plan, kept("lint", "fail"))
    assert [(r.code, r.message) for r in result.reasons] == [
        ("failed", "requires lint in self: fail")
    ]
    result = judged(plan)
    assert [(r.code, r.message) for r in result.reasons] == [
        ("no-receipt", "requires lint in self: no receipt")
    ]


def test_speaks_for() -> None:
    assert gate.speaks_for(aside("unverified", None), "test", "self")  # unreadable: anything
    assert not gate.speaks_for(aside("stale-content", "lint"), "test", None)
    assert gate.speaks_for(aside("stale-content", "test", repos=("self",)), "test", "self")
    assert not gate.speaks_for(aside("stale-content", "test", repos=("other",)), "test", "self")
    assert gate.speaks_for(aside("stale-content", "test", repos=("other",)), "test", None)
    assert gate.speaks_for(aside("stale-content", "test"), "test", "self")


def test_single_capability_judges_one_column(plan: Plan) -> None:
    claim = plan.evidence.claims["both"]
    views = [kept("test", "pass").view]
    assert gate.single_capability(plan, claim, "test", views).status == "proven"
    e2e = gate.single_capability(plan, claim, "e2e", views)
    assert (e2e.status, e2e.reasons) == ("unproven", ("e2e: no receipt",))
    assert judged(plan, kept("test", "pass")).claims["both"].status == "unproven"

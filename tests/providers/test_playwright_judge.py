"""playwright_judge.settle on hand-made reports: how a capability's claims are marked.

End to end with a real browser is test_playwright_example.py / test_playwright_adapter.py;
here each marking rule of docs/adapters is checked alone, with ``ClaimScope`` and
``ReportResult`` records as the adapter's ``read`` hands them over.
"""

from __future__ import annotations

from dataclasses import replace

from changeloop.model import ClaimScope, Provider
from changeloop.outcome import Outcome
from changeloop.providers.playwright_judge import RunVerdict, settle
from changeloop.runner_reports.model import ReportResult, TestCase, counts_of

PROVIDER = Provider(name="browser", adapter="playwright", capability="browser", repository="web")
GREEN = RunVerdict(None, None, ())
SCOPE = ClaimScope(requiring={"browser": ("login", "logout")}, known=("login", "logout"))


def report(*cases: TestCase) -> ReportResult:
    return ReportResult("playwright-json", cases, counts_of(cases))


def base(parsed: ReportResult) -> Outcome:
    return Outcome(capability="browser", status="pass", tests=parsed.counts, details={"x": 1})


def marks(out: Outcome) -> dict[str, str]:
    return dict(out.claims)


def test_green_run_crediting_every_needed_claim_passes() -> None:
    parsed = report(
        TestCase("a", "passed", claims=("login",)), TestCase("b", "passed", claims=("logout",))
    )
    out = settle(PROVIDER, SCOPE, base(parsed), GREEN, parsed)
    assert (out.status, marks(out)) == ("pass", {"login": "credited", "logout": "credited"})
    assert "claimNotes" not in out.details and out.details["x"] == 1


def test_green_run_leaving_a_claim_uncredited_is_inconclusive() -> None:
    parsed = report(TestCase("a", "passed", claims=("login",)), TestCase("b", "skipped"))
    out = settle(PROVIDER, SCOPE, base(parsed), GREEN, parsed)
    assert out.status == "inconclusive"
    assert marks(out) == {"login": "credited", "logout": "uncredited"}
    assert out.reason == (
        'passing run left claims uncredited — logout: no test carries {type: "claim",'
        ' description: "logout"}'
    )


def test_flaky_citations_credit_only_with_allow_flaky() -> None:
    parsed = report(
        TestCase("a", "passed", claims=("login",), flaky=True),
        TestCase("b", "passed", claims=("logout",)),
    )
    out = settle(PROVIDER, SCOPE, base(parsed), GREEN, parsed)
    assert out.status == "inconclusive" and marks(out)["login"] == "uncredited"
    assert "allowFlaky" in out.details["claimNotes"]["login"]
    lenient = replace(PROVIDER, allow_flaky=True)
    assert settle(lenient, SCOPE, base(parsed), GREEN, parsed).status == "pass"


def test_a_failing_citing_test_fails_the_claim_and_the_run_verdict_stands() -> None:
    parsed = report(
        TestCase("a", "failed", claims=("login",)), TestCase("b", "passed", claims=("login",))
    )
    red = RunVerdict("fail", "1 test(s) failed: a", ())
    out = settle(PROVIDER, SCOPE, base(parsed), red, parsed)
    assert (out.status, out.reason) == ("fail", "1 test(s) failed: a")
    assert marks(out) == {"login": "failed", "logout": "uncredited"}


def test_browser_automation_never_credits_an_os_input_claim() -> None:
    scope = replace(SCOPE, os_input=("login",))
    parsed = report(
        TestCase("a", "passed", claims=("login",)), TestCase("b", "passed", claims=("logout",))
    )
    out = settle(PROVIDER, scope, base(parsed), GREEN, parsed)
    assert out.status == "inconclusive" and marks(out)["login"] == "uncredited"
    both = replace(PROVIDER, input_mode="both")
    assert settle(both, scope, base(parsed), GREEN, parsed).status == "pass"


def test_listed_claims_are_credited_by_a_green_run_and_nothing_ran_is_inconclusive() -> None:
    listed = replace(PROVIDER, claims=("smoke",))
    parsed = report(TestCase("a", "passed"))
    out = settle(listed, ClaimScope(), base(parsed), GREEN, parsed)
    assert (out.status, marks(out)) == ("pass", {"smoke": "credited"})
    skipped = report(TestCase("a", "skipped"))
    out = settle(PROVIDER, ClaimScope(), base(skipped), GREEN, skipped)
    assert (out.status, out.reason) == ("inconclusive", "no test ran (all skipped or filtered)")

"""external_judge.judge on hand-made judgments: which envelope decides the outcome.

The adapter end to end (real keys, real repositories) is test_external_adapter.py;
here the choice among files is checked alone, every order of the same files too.
"""

from __future__ import annotations

from itertools import permutations
from pathlib import Path

from changeloop.model import Provider
from changeloop.providers.external_check import Judged
from changeloop.providers.external_judge import display, judge
from changeloop.signing.verify import Verified

ROOT = Path("/ws")
RECEIPTS = ROOT / "openspec/changes/c/receipts"
PROVIDER = Provider(name="review", adapter="external", capability="review", claims=("a", "b"))


def verified(status: str, *, reason: str | None = None) -> Verified:
    extension = {
        "issuer": "ci",
        "provider": "review",
        "capability": "review",
        "finishedOn": "2026-01-01T00:00:00Z",
        "adapter": "receipt-signed",
        "wiring": None,
        **({"reason": reason} if reason else {}),
    }
    return Verified(
        id=f"sha256:{status}",
        payload=b"{}",
        statement={"predicate": {"url": "https://ci.example/1"}},
        extension=extension,
        keyid="k1",
        result="PASSED" if status == "pass" else "FAILED",
        status=status,
    )


def valid(name: str, status: str, **kw: str) -> Judged:
    return Judged(RECEIPTS / name, "valid", verified=verified(status, **kw))


def test_nothing_addressed_to_the_provider_is_no_receipt() -> None:
    assert judge(PROVIDER, ROOT, []) == []
    assert judge(PROVIDER, ROOT, [Judged(RECEIPTS / "x.json", "ignored")]) == []


def test_a_valid_pass_credits_the_providers_claims() -> None:
    [out] = judge(PROVIDER, ROOT, [valid("ok.json", "pass")])
    assert (out.status, out.reason, out.claims) == (
        "pass",
        None,
        {"a": "credited", "b": "credited"},
    )
    assert out.details["receipt"]["path"] == "openspec/changes/c/receipts/ok.json"
    assert out.url == "https://ci.example/1" and out.issuer == "ci"


def test_a_valid_failure_wins_over_any_pass_in_every_order() -> None:
    stale = Judged(RECEIPTS / "old.json", "invalid", check="subject", reason="stale")
    files = [valid("ok.json", "pass"), valid("bad.json", "fail", reason="3 failed"), stale]
    for order in permutations(files):
        [out] = judge(PROVIDER, ROOT, order)
        assert out.status == "fail" and out.claims == {"a": "failed", "b": "failed"}
        assert out.reason == (
            "the external receipt openspec/changes/c/receipts/bad.json from ci says fail: 3 failed"
        )


def test_an_inconclusive_receipt_stays_inconclusive() -> None:
    [out] = judge(PROVIDER, ROOT, [valid("ok.json", "pass"), valid("maybe.json", "inconclusive")])
    assert out.status == "inconclusive" and out.claims == {"a": "failed", "b": "failed"}


def test_a_broken_file_fails_closed_even_beside_a_valid_pass() -> None:
    """It may be the receipt that says FAILED: nobody can tell, so nothing passes."""
    broken = Judged(RECEIPTS / "junk.json", "broken", check="json", reason="not JSON")
    stale = Judged(RECEIPTS / "old.json", "invalid", check="subject", reason="stale")
    for order in permutations([valid("ok.json", "pass"), broken, stale]):
        [out] = judge(PROVIDER, ROOT, order)
        assert out.status == "fail" and out.claims == {}
        assert "fail closed — openspec/changes/c/receipts/junk.json: json check failed" in (
            out.reason or ""
        )
        assert "old.json" not in (out.reason or "")  # the reason names the broken ones
        assert {f.kind for f in out.findings} == {"receipt-json", "receipt-subject"}


def test_only_invalid_files_fail_naming_each_first_failed_check() -> None:
    judged = [
        Judged(RECEIPTS / "one.json", "invalid", check="wiring", reason="rewired"),
        Judged(RECEIPTS / "two.json", "invalid", check="subject", reason="other tree"),
        Judged(RECEIPTS / "three.json", "ignored"),
    ]
    [out] = judge(PROVIDER, ROOT, judged)
    assert out.status == "fail" and out.claims == {}
    assert out.reason == (
        "no valid receipt for this content — openspec/changes/c/receipts/one.json: wiring"
        " check failed: rewired; openspec/changes/c/receipts/two.json: subject check failed:"
        " other tree"
    )
    assert [(f.kind, f.file) for f in out.findings] == [
        ("receipt-wiring", "openspec/changes/c/receipts/one.json"),
        ("receipt-subject", "openspec/changes/c/receipts/two.json"),
    ]


def test_a_path_outside_the_workspace_is_shown_whole() -> None:
    assert display(Path("/elsewhere/r.json"), ROOT) == "/elsewhere/r.json"
    assert display(RECEIPTS / "r.json", ROOT) == "openspec/changes/c/receipts/r.json"

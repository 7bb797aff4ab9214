"""Folding a run's records: what the verdict and the views read, from records alone."""

from __future__ import annotations

from changeloop.masking import Masker
from changeloop.records import ProviderReport, ReceiptEntry
from changeloop.run.fold import durations, finished_word, notes, views, with_notes, withdraw
from changeloop.verdict import ReceiptView


def _entry(status: str, capability: str = "test") -> ReceiptEntry:
    view = ReceiptView(
        provider="p",
        capability=capability,
        status=status,  # type: ignore[arg-type]
        repositories=("self",),
        reason=None,
        claims={},
        input_mode=None,
        citations={},
    )
    return ReceiptEntry(capability, "p", status, None, "sha256:x", "r/p/p.test.json", view)


def test_a_provider_whose_files_were_lost_keeps_no_receipt_and_says_why() -> None:
    report = ProviderReport(
        "p", "command", "self", state="ran", receipts=(_entry("pass"),), cache=True
    )
    other = ProviderReport("q", "command", "self", state="ran", receipts=(_entry("pass"),))
    folded = withdraw(
        {"p": report, "q": other}, {"p": OSError(28, "No space left on device")}, Masker([])
    )
    assert folded["p"].receipts == () and not folded["p"].cache
    assert folded["p"].notes == (
        ("test", "test: provider p could not run: [Errno 28] No space left on device"),
    )
    assert folded["q"] is other
    assert len(views(folded)) == 1


def test_notes_are_masked_and_the_first_per_capability_counts() -> None:
    a = with_notes(
        ProviderReport("a", "external", "self"), (("review", "review: no key for s3cretvalue"),)
    )
    b = with_notes(ProviderReport("b", "external", "self"), (("review", "review: later"),))
    assert notes({"a": a, "b": b}, Masker(["s3cretvalue"])) == {"review": "review: no key for ***"}


def test_finished_words_follow_the_receipts() -> None:
    def word(*statuses: str) -> str | None:
        report = ProviderReport("p", "command", "self", receipts=tuple(_entry(s) for s in statuses))
        return finished_word(report, "ok")

    assert word("pass", "pass") == "ok"
    assert word("pass", "fail") == "failed"
    assert word("pass", "inconclusive") == "inconclusive"
    assert word() == "no receipt"
    assert finished_word(None, "failed") == "failed"


def test_durations_are_of_providers_that_ran() -> None:
    import tempfile
    from pathlib import Path

    from config_helpers import VALID_EXECUTION, plan_for  # a real plan: its providers' names

    with tempfile.TemporaryDirectory() as tmp:
        plan = plan_for(Path(tmp) / "ws", execution=VALID_EXECUTION)
    reports = {
        "test": ProviderReport("test", "test-discovery", "self", state="ran", duration_ms=1500),
        "lint": ProviderReport("lint", "command", "self", state="cached", duration_ms=9),
        "setup-self": ProviderReport("setup-self", "command", "self", state="ran", duration_ms=7),
    }
    assert durations(reports, plan) == {"test": 1.5}

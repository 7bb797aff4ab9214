"""The run's records folded into what the verdict, the views and the next run read. Pure.

Example::

    reports = withdraw(reports, lost, masker)        # receipts that never reached the disk
    verdict = decide(plan, views(reports), notes(reports, masker))
    durations(reports, plan)                         # {provider: seconds} for the next order
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from changeloop.errors import filesystem_cause
from changeloop.masking import Masker
from changeloop.model import Plan
from changeloop.records import ProviderReport
from changeloop.verdict import ReceiptView

__all__ = ["durations", "finished_word", "notes", "views", "with_notes", "withdraw"]


def with_notes(report: ProviderReport, extra: tuple[tuple[str, str], ...]) -> ProviderReport:
    return replace(report, notes=report.notes + extra) if extra else report


def withdraw(
    reports: Mapping[str, ProviderReport], lost: Mapping[str, OSError], masker: Masker
) -> dict[str, ProviderReport]:
    """Each provider whose files could not be written loses its receipts, with a note why.

    The verdict reads only what is on disk: a receipt the writer lost must not count.
    """
    out = dict(reports)
    for name, error in lost.items():
        report = out.get(name)
        if report is None:
            continue
        reason = masker.text(_unwritten(error))
        capabilities = dict.fromkeys(e.capability for e in report.receipts)
        why = tuple((c, f"{c}: provider {name} could not run: {reason}") for c in capabilities)
        out[name] = replace(report, receipts=(), reason=reason, notes=why, cache=False)
    return out


def _unwritten(error: OSError) -> str:
    """Why a provider's files are not on disk, naming the file and the real cause."""
    if isinstance(error.filename, str):
        cause, _fix = filesystem_cause(error, error.filename)
        return f"cannot write {error.filename}: {cause}"
    return str(error) or type(error).__name__


def views(reports: Mapping[str, ProviderReport]) -> list[ReceiptView]:
    return [e.view for report in reports.values() for e in report.receipts]


def notes(reports: Mapping[str, ProviderReport], masker: Masker) -> dict[str, str]:
    """capability -> why it has no receipt; the first note per capability counts."""
    out: dict[str, str] = {}
    for report in reports.values():
        for capability, text in report.notes:
            out.setdefault(capability, masker.text(text))
    return out


def finished_word(report: ProviderReport | None, scheduler_said: str | None) -> str | None:
    """How a provider's progress line ends: ``ok`` only when it has receipts and all passed;
    ``failed``, ``inconclusive``, or ``no receipt`` (an ``external`` provider that found
    none) otherwise."""
    statuses = {entry.status for entry in report.receipts} if report else set()
    if not statuses:
        return scheduler_said if scheduler_said == "failed" else "no receipt"
    if "fail" in statuses:
        return "failed"
    return "inconclusive" if "inconclusive" in statuses else "ok"


def durations(reports: Mapping[str, ProviderReport], plan: Plan) -> dict[str, float]:
    """Seconds each provider that ran took (the next run starts the longest chains first)."""
    return {
        name: r.duration_ms / 1000
        for name, r in reports.items()
        if r.state == "ran" and name in plan.providers
    }

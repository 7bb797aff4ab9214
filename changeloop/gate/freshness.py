"""``maxAge`` wherever a receipt is weighed: an accepted receipt expires in ``gate`` too.

Example::

    why = committed_expiry(scope.admitting(verified), verified.extension, "receipts/x.json", now)
    why = workspace_expiry(plan, verified.extension, now)   # an external provider's own receipt

``prove``'s ``external`` provider refuses a receipt older than its ``maxAge``. The
verbs that judge receipts later (``gate``, and ``summary`` and ``report`` through
it) hold the same line, in the same words, on both kinds of receipt they read: a
committed or imported receipt (the ``maxAge`` of the external providers that take
it), and the workspace's receipt of an external provider, which carries the time
of the receipt it accepted (``details.receipt.finishedOn``). An expired pass is
weighed as the ``fail`` ``prove`` would write now.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from changeloop.model import Plan, Provider
from changeloop.providers.external_judge import check_failed, no_valid_receipt
from changeloop.signing.verify import age_problem

__all__ = ["committed_expiry", "workspace_expiry"]


def committed_expiry(
    admitting: Sequence[Provider], ext: Mapping[str, Any], uri: str, now: datetime
) -> str | None:
    """Why a committed pass is too old for every external provider that takes it, or None."""
    if ext.get("status") != "pass" or not admitting:
        return None
    ages = [p.max_age_s for p in admitting]
    if any(age is None for age in ages):
        return None  # one provider takes it at any age
    limit = max(age for age in ages if age is not None)
    too_old = age_problem(str(ext["finishedOn"]), limit, now)
    return no_valid_receipt(check_failed(uri, "time", too_old)) if too_old else None


def workspace_expiry(plan: Plan, ext: Mapping[str, Any], now: datetime) -> str | None:
    """Why an external provider's own pass no longer holds under its ``maxAge``, or None."""
    if ext.get("adapter") != "external" or ext.get("status") != "pass":
        return None
    provider = plan.providers.get(str(ext.get("provider")))
    if provider is None or provider.adapter != "external" or provider.max_age_s is None:
        return None
    details = ext.get("details")
    accepted = details.get("receipt") if isinstance(details, Mapping) else None
    finished = accepted.get("finishedOn") if isinstance(accepted, Mapping) else None
    where = str(accepted.get("path")) if isinstance(accepted, Mapping) else "its receipt"
    try:
        too_old = age_problem(str(finished), provider.max_age_s, now) if finished else None
    except ValueError:
        finished = None
    if not finished:  # fail closed: an age that cannot be read is not young
        return no_valid_receipt(
            check_failed(
                where,
                "time",
                "the receipt records no time for the receipt it accepted, so its maxAge"
                " cannot be checked; prove again",
            )
        )
    return no_valid_receipt(check_failed(where, "time", too_old)) if too_old else None

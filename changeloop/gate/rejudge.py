"""A receipt's claim marks judged again by the claim policy of now (``gate`` runs nothing).

A receipt records, per claim, whether its run credited it, and the citations that
decided it (``{test, depth, ref, result, grounding}``). Crediting depends on the
claim's ``archetype``: a behavioral claim needs a ``grounded`` (or ``not-checked``)
citation, a structural one an ``inert`` citation. When the policy changed since —
a claim flipped from structural to behavioral — the recorded mark no longer says
what a run would say now, so gate applies the one rule
(:func:`changeloop.verdict.citation_credits`) to the recorded citations::

    rejudged(plan, "test", {"shape": "credited"}, {"shape": [{"result": "passed",
             "grounding": "inert", ...}]})   # {"shape": "uncredited"} once behavioral
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from changeloop.model import ClaimMark, Plan
from changeloop.verdict import citation_credits

__all__ = ["rejudged"]


def rejudged(
    plan: Plan,
    provider: str,
    claims: Mapping[str, Any],
    citations: Mapping[str, Sequence[Mapping[str, Any]]],
) -> dict[str, ClaimMark]:
    """``claims`` with each credit its recorded citations no longer earn made
    ``uncredited``. A claim the provider lists in its ``claims`` keeps its mark: listing
    credits it, and the verdict applies the listing rule itself."""
    planned = plan.providers.get(provider)
    listed = set(planned.claims) if planned is not None else set()
    out: dict[str, ClaimMark] = {}
    for cid, mark in claims.items():
        out[cid] = mark
        claim = plan.evidence.claims.get(cid)
        cited = citations.get(cid)
        if mark != "credited" or claim is None or not cited or cid in listed:
            continue
        passed = [c for c in cited if isinstance(c, Mapping) and c.get("result") == "passed"]
        grounding = [c.get("grounding") for c in passed]
        if not any(citation_credits(claim.archetype, _text(g)) for g in grounding):
            out[cid] = "uncredited"
    return out


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None

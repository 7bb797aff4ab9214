"""A required capability that is a typo of a known one: refused, with "did you mean".

``requires: [tests]`` names a project-defined word no provider produces, so the
claim could only ever end ``unproven`` — and doctor would advise writing a custom
runner for it. When the word is close to a capability changeloop knows and
nothing in the plan produces it, it is refused before anything runs, pointing
at the line: ``capability 'tests' … did you mean 'test'?``. A project word that
some provider does produce is never questioned.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator

from changeloop.errors import Problem
from changeloop.model import KNOWN_CAPABILITIES, Plan
from changeloop.preflight.locate import Locator


def typo_of(capability: str) -> str | None:
    """The known capability ``capability`` is a near miss of (``tests`` → ``test``), or None."""
    if capability in KNOWN_CAPABILITIES:
        return None
    close = difflib.get_close_matches(capability, KNOWN_CAPABILITIES, n=1, cutoff=0.75)
    return close[0] if close else None


def capability_typos(plan: Plan, at: Locator) -> Iterator[Problem]:
    """One problem per required word that looks like a known capability nobody produces."""
    produced = {c for p in plan.providers.values() for c in (p.capability, *p.outputs)}
    evidence = plan.evidence
    required: list[tuple[str, tuple[str | int, ...], str]] = []
    marks = at.evidence
    for i, capability in enumerate(evidence.requires):  # in the file's order
        keys: tuple[str | int, ...] = ("requires", capability)
        if marks is not None and keys not in marks.key_marks:  # a list, not a map
            keys = ("requires", i)
        required.append((capability, keys, "the change"))
    for cid, claim in sorted(evidence.claims.items()):
        for i, capability in enumerate(claim.requires):
            required.append((capability, ("claims", cid, "requires", i), f"claim {cid}"))
    for capability, keys, who in required:
        close = typo_of(capability)
        if capability in produced or close is None:
            continue
        yield Problem(
            code="unknown_capability",
            message=(
                f"{who} requires capability {capability!r}, which no provider produces and "
                f"changeloop does not know; did you mean {close!r}?"
            ),
            location=at.in_evidence(*keys),
            fix=f"write `{close}` (the capabilities changeloop knows: "
            f"{', '.join(KNOWN_CAPABILITIES)}), or wire a provider whose capability is "
            f"{capability!r} in execution.yaml",
        )

"""The claims × capabilities matrix: one cell per claim and capability it requires.

Example::

    capabilities, rows = claim_rows(plan, gate_result, refs_of(gate_result))
    rows[0].cells["test"].status    # "proven" | "failed" | "blocked" | … | "unproven"
    rows[0].cells["test"].cause     # "stale: content changed: …" — one line, why

A cell is the one verdict over a one-capability copy of its claim (as gate
does per claim, :func:`changeloop.gate.single_capability`), in the claim
states' own words; an envelope gate set aside is the cell's cause (*not
verified*, *stale*) — never a pass.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from changeloop import gate
from changeloop.model import Claim, Plan
from changeloop.report.model import ASIDE_WORDS, Cell, CellStatus, ClaimRow
from changeloop.report.refs import Refs

MAX_CAUSE = 200  # characters of a cell's cause shown in the cell (the details hold it whole)


def claim_rows(
    plan: Plan, result: gate.GateResult, refs: Refs
) -> tuple[tuple[str, ...], tuple[ClaimRow, ...]]:
    """The matrix's columns (every required capability, in order) and its rows, by claim id."""
    capabilities = tuple(
        dict.fromkeys(c for cl in plan.evidence.claims.values() for c in cl.requires)
    )
    rows = tuple(
        ClaimRow(
            id=cid,
            statement=claim.statement,
            ref=claim.ref,
            status=result.claims[cid].status if cid in result.claims else "unproven",
            cells={
                cap: cell(plan, claim, cap, result, refs) if cap in claim.requires else None
                for cap in capabilities
            },
        )
        for cid, claim in sorted(plan.evidence.claims.items())
    )
    return capabilities, rows


def cell(plan: Plan, claim: Claim, capability: str, result: gate.GateResult, refs: Refs) -> Cell:
    """One claim's status for one capability, the receipts behind it and what credited it."""
    cid = claim.id
    part = gate.single_capability(plan, claim, capability, [k.view for k in result.kept])
    status: CellStatus = part.status
    reasons = list(part.reasons)
    aside = [s for s in result.set_aside if gate.speaks_for(s, capability, claim.repository)]
    fatal = [s for s in aside if s.code == "unverified" and s.fatal]
    cause: str | None = None
    if status == "proven" and fatal:
        # gate fails closed: an envelope that does not verify may have spoken here.
        status = "inconclusive"
        cause = f"{ASIDE_WORDS['unverified']}: {fatal[0].message}"
    elif status == "unproven" and aside:
        first = fatal[0] if fatal else aside[0]
        cause = f"{ASIDE_WORDS.get(first.code, first.code)}: {first.message}"
        reasons = []
    reasons += [s.message for s in aside if s.message not in reasons]
    if cause is None and status != "proven" and reasons:
        cause = reasons[0].removeprefix(f"{capability}: ")  # the column names it already
    scoped = [
        k
        for k in result.kept
        if k.view.capability == capability
        and (claim.repository is None or claim.repository in k.view.repositories)
    ]
    mentioning = [k for k in scoped if cid in k.view.claims] or scoped
    tests: list[str] = []
    grounding = mutation = None
    for k in mentioning:
        ext = k.verified.extension
        if k.view.claims.get(cid) == "credited":
            planned = gate.plan_provider(plan, k.view.provider)
            listed = planned is not None and cid in planned.claims
            tests += crediting_tests(cid, k.verified.statement, ext, listed=listed)
        grounding = grounding or grounding_summary(cid, ext)
        mutation = mutation or mutation_summary(cid, ext)
    return Cell(
        capability=capability,
        status=status,
        reasons=tuple(reasons),
        cause=_line(cause) if cause else None,
        receipts=tuple(refs.kept[id(k)] for k in mentioning)
        + tuple(refs.aside[id(s)] for s in aside),
        tests=tuple(dict.fromkeys(tests)),
        grounding=grounding,
        mutation=mutation,
    )


def crediting_tests(
    cid: str, statement: Mapping[str, Any], ext: Mapping[str, Any], *, listed: bool
) -> list[str]:
    """What credited ``cid``: cited tests where the receipt names them, else how it was credited."""
    cited = ext.get("citations")
    entries = cited.get(cid) if isinstance(cited, dict) else None
    if isinstance(entries, list):
        names = [
            c.get("test") if isinstance(c, dict) else c
            for c in entries
            if not isinstance(c, dict) or c.get("result", "passed") == "passed"
        ]
        if any(names):
            return [str(n) for n in names if n]
    passed = [str(t) for t in statement.get("predicate", {}).get("passedTests") or []]
    tagged = [t for t in passed if f"[claim:{cid}]" in t]
    if tagged:
        return tagged
    if listed:
        return [f"listed by provider {ext.get('provider')}"]
    if passed:
        return [f"cited by a passing test ({len(passed)} passed)"]
    return []


def grounding_summary(cid: str, ext: Mapping[str, Any]) -> str | None:
    """``"2 grounded, 1 untouched; 1 reached outside entry points"``: the receipt's citations
    of ``cid`` by grounding, and what else they say (grounded through a fixture's setup)."""
    cited = ext.get("citations")
    if not isinstance(cited, dict) or not isinstance(cited.get(cid), list):
        return None
    entries = [c for c in cited[cid] if isinstance(c, dict)]
    kinds = [str(c.get("grounding") or "not-checked") for c in entries]
    if not kinds:
        return f"{len(cited[cid])} citation(s)"
    counts = {k: kinds.count(k) for k in dict.fromkeys(kinds)}
    text = ", ".join(f"{n} {k}" for k, n in counts.items())
    outside = sum(1 for c in entries if c.get("reached_outside_entry") is True)
    if outside:
        text += f"; {outside} reached outside entry points"
    setup = sorted({str(c["groundedBy"]) for c in entries if c.get("groundedBy")})
    if setup:
        text += f"; grounded by {', '.join(setup)}"
    return text


def mutation_summary(cid: str, ext: Mapping[str, Any]) -> str | None:
    """``"4/5 mutants killed"``: the receipt's mutation score of ``cid``, a score not a word."""
    score = (ext.get("mutation") or {}).get(cid) if isinstance(ext.get("mutation"), dict) else None
    if not isinstance(score, dict):
        return None
    total, killed = score.get("total"), score.get("killed")
    if not isinstance(total, int) or not isinstance(killed, int):
        return None
    return f"{killed}/{total} mutants killed" if total else "no mutant (inconclusive)"


def _line(text: str) -> str:
    """One line, bounded: what a cell shows without hover."""
    flat = " ".join(text.split())
    return flat if len(flat) <= MAX_CAUSE else flat[: MAX_CAUSE - 1] + "…"

"""The report's short "What to do next": one line per thing to do, with its command.

Example::

    report_steps(plan, proven=False, cells=[...], public_keys=[])
    # (("Fix the failing tests the red cells name, then prove again",
    #   "changeloop prove add-fees"),)

Read off the page's own cells, so the advice and the matrix never disagree.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from changeloop.model import Plan
from changeloop.report.model import ASIDE_WORDS, Cell

# What a claim's reason says when no test cites it, and where the snippet follows.
_UNCITED = "nothing in its run cites claim"


def report_steps(
    plan: Plan, *, proven: bool, cells: Iterable[Cell], summary_carried: bool
) -> tuple[tuple[str, str], ...]:
    """(what to do, the command to run) for this page's state, most useful first."""
    change = plan.change.id
    if proven:
        if plan.change.archived:
            return (("Nothing is missing: the archived change is proven for this content.", ""),)
        steps: list[tuple[str, str]] = [
            ("Re-check right before merging or archiving.", f"changeloop gate {change}")
        ]
        if not summary_carried:
            steps.append(
                (
                    "Carry the signed summary and its receipts into the change before "
                    "archiving (KEY: the key prove signed with).",
                    f"changeloop summary {change} --sign-key KEY --into-change",
                )
            )
        steps.append(
            ("Archive the change; its receipts move with it.", f"openspec archive {change}")
        )
        return tuple(steps)
    todo: list[tuple[str, str]] = []
    prove = f"changeloop prove {change}"
    for cell in cells:
        cause = cell.cause or ""
        if cell.status in ("failed", "blocked"):
            todo.append(("Fix the failing tests the red cells name, then prove again.", prove))
        elif cause.startswith(ASIDE_WORDS["unverified"]):
            todo.append(
                (
                    "A receipt did not verify with the keys given: pass the public half of "
                    "the key that signed it (the .pub beside the key `prove --sign-key` used).",
                    f"changeloop report {change} --public-key KEY.pub",
                )
            )
        elif cause.startswith("stale"):
            todo.append(("What the receipts were made for changed since: prove again.", prove))
        elif _UNCITED in cause or any(_UNCITED in r for r in cell.reasons):
            todo.append(("Cite the claim from the test that proves it.", _snippet(cell.reasons)))
        else:
            todo.append(("Prove what has no receipt yet.", prove))
    if not todo:  # only the change-level requirements (the table below) are not met
        todo.append(("Fix what the change-level requirements below name, then prove again.", prove))
    return _unique(todo)


def _snippet(reasons: Sequence[str]) -> str:
    """The citation the reason names (``@pytest.mark.claim("greeting")`` …)."""
    for reason in reasons:
        if _UNCITED in reason and ": " in reason.rsplit("; ", 1)[-1]:
            return reason.rsplit("; ", 1)[-1].split(": ", 1)[1]
    return ""


def _unique(steps: list[tuple[str, str]]) -> tuple[tuple[str, str], ...]:
    seen: dict[tuple[str, str], None] = {}
    for step in steps:
        seen.setdefault(step)
    return tuple(seen)

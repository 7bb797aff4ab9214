"""The kept receipts' findings, grouped by kind, each located and linked where it can be.

Example::

    groups = findings_of(plan, gate_result, links)
    groups["ungrounded"][0].href     # a link to the file, relative to the page (or None)
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from changeloop import gate
from changeloop.model import Plan
from changeloop.report.links import Links
from changeloop.report.model import FindingItem


def findings_of(
    plan: Plan, result: gate.GateResult, links: Links
) -> dict[str, tuple[FindingItem, ...]]:
    """Findings of every kept receipt by kind (sorted); malformed entries are passed over.

    One provider's receipts share a run (test and discovery), so they carry the same
    findings: each is listed once.
    """
    groups: dict[str, list[FindingItem]] = {}
    seen: set[tuple[str, str, str | None, str]] = set()
    for k in result.kept:
        ext = k.verified.extension
        repos = list(k.view.repositories)
        for f in _as_list(ext.get("findings")):
            if not isinstance(f, dict) or not isinstance(f.get("kind"), str):
                continue
            location, href = where(plan, repos, f, links)
            key = (f["kind"], str(f.get("message", "")), location, k.view.provider)
            if key in seen:
                continue
            seen.add(key)
            groups.setdefault(f["kind"], []).append(
                FindingItem(
                    kind=f["kind"],
                    message=str(f.get("message", "")),
                    severity=str(f["severity"]) if f.get("severity") else None,
                    provider=k.view.provider,
                    location=location,
                    href=href,
                )
            )
    return {kind: tuple(items) for kind, items in sorted(groups.items())}


def _as_list(value: Any) -> Iterable[Any]:
    return value if isinstance(value, list) else []


def where(
    plan: Plan, repos: Sequence[str], finding: Mapping[str, Any], links: Links
) -> tuple[str | None, str | None]:
    """``file:line`` relative to the workspace and its link; a file outside is shown, not linked."""
    file = finding.get("file")
    if not isinstance(file, str) or not file:
        return None, None
    line = finding.get("line")
    suffix = f":{line}" if isinstance(line, int) else ""
    repo = plan.repositories.get(repos[0]) if len(repos) == 1 else None
    base = (repo.path if repo else plan.root).resolve()
    target = Path(file) if Path(file).is_absolute() else base / file
    try:
        rel = target.resolve().relative_to(links.root).as_posix()
    except (ValueError, OSError):
        return f"{file}{suffix}", None  # outside the workspace: shown, not linked
    return f"{rel}{suffix}", links.href(rel)

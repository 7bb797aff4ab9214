"""The recorded run (``runs/<id>/run.json``) as the report uses it: which run, its
receipts, and its Gantt chart's bars.

Example::

    run_dir = find_run(plan, None)                  # the change's newest run, or None
    record = runlog.load(run_dir)
    envelopes = run_envelopes(plan, run_dir, record)
    timeline_of(record, {"unit": "pass"})           # bars, critical path marked
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from changeloop.errors import ChangeloopError, Problem
from changeloop.model import Plan
from changeloop.report import timeline as gantt
from changeloop.report.model import Bar, Timeline
from changeloop.run import runlog
from changeloop.signing.verify import parse_time
from changeloop.workspace.state import StateDir


def find_run(plan: Plan, run_id: str | None) -> Path | None:
    """``--run``'s directory (refused when unknown), else the change's newest recorded run."""
    runs = StateDir(plan.root).runs
    if run_id is not None:
        path = runs / run_id
        if run_id in ("", ".", "..") or "/" in run_id or not path.is_dir():
            known = (
                sorted((p.name for p in runs.iterdir() if p.is_dir()), reverse=True)[:5]
                if (runs.is_dir())
                else []
            )
            raise ChangeloopError(
                Problem(
                    code="unknown_run",
                    message=f"no run {run_id!r} under {runs.relative_to(plan.root)}"
                    + (f" (newest: {', '.join(known)})" if known else " (no run recorded yet)"),
                    fix="omit --run to use the change's latest run, or name one of the above",
                )
            )
        return path
    if not runs.is_dir():
        return None
    # Run ids sort by second only; within one second the recorded start decides. A run
    # whose run.json is missing or damaged is passed over (--run names it to see why).
    newest: tuple[str, str, Path] | None = None
    for path in (p for p in runs.iterdir() if p.is_dir()):
        try:
            data = runlog.load(path)
        except ChangeloopError:
            continue
        if data["change"] == plan.change.id:
            key = (str(data["startedOn"]), path.name, path)
            if newest is None or key[:2] > newest[:2]:
                newest = key
    return newest[2] if newest else None


def run_envelopes(plan: Plan, run_dir: Path, record: Mapping[str, Any]) -> list[Path]:
    """The run's receipts: only envelopes inside its own directory, whatever run.json says."""
    inside = run_dir.resolve()
    return [
        file
        for p in runlog.providers_of(record).values()
        for path in p.get("receipts", [])
        if (file := (plan.root / path).resolve()).is_relative_to(inside) and file.is_file()
    ]


def timeline_of(record: Mapping[str, Any], statuses: Mapping[str, str]) -> Timeline:
    """The run's bars per slot (``statuses``: each provider's worst), critical path marked."""
    try:
        origin = parse_time(str(record["startedOn"])).timestamp()
    except (KeyError, ValueError):
        origin = None
    bars: list[Bar] = []
    not_drawn: list[tuple[str, str]] = []
    deps: dict[str, Sequence[str]] = {}
    for p in runlog.providers_of(record).values():
        name = str(p.get("name"))
        deps[name] = [str(d) for d in p.get("dependencies") or []]
        if p.get("state") != "ran" or p.get("start") is None or p.get("end") is None:
            why = {"cached": "cached: reused a pass"}.get(str(p.get("state")), "not run")
            not_drawn.append((name, why))
            continue
        start = parse_time(str(p["start"])).timestamp()
        end = parse_time(str(p["end"])).timestamp()
        base = origin if origin is not None else start
        bars.append(
            Bar(
                provider=name,
                slot=int(p.get("slot") or 0),
                start_s=max(start - base, 0.0),
                end_s=max(end - base, 0.0),
                status=statuses.get(name, "unknown"),
            )
        )
    total = 0.0
    finished = record.get("finishedOn")
    if origin is not None and finished:
        total = max(parse_time(str(finished)).timestamp() - origin, 0.0)
    return Timeline(
        slots=max(
            1, min(int(record.get("slots") or 1), 1 + max((b.slot for b in bars), default=0))
        ),
        total_s=total,
        bars=tuple(gantt.bars_with_critical(bars, deps)),
        not_drawn=tuple(not_drawn),
    )

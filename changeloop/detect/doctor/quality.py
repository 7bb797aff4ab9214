"""Doctor's word on consumer-quality lanes: configure and pilot them before trusting them."""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING

from changeloop.detect.derive import required
from changeloop.detect.doctor.finding import DoctorFinding
from changeloop.quality.lanes import QUALITY_FILE, runs_quality

if TYPE_CHECKING:
    from changeloop.detect.types import ChangeContext


def quality_findings(ctx: ChangeContext) -> list[DoctorFinding]:
    """Say to configure and pilot the quality lanes before trusting them as evidence."""
    if not (ctx.root / QUALITY_FILE).is_file():
        return []
    if not required(ctx.evidence, ctx.repositories).get("static-analysis"):
        return []
    configured = ctx.execution.providers if ctx.execution else {}
    if any(runs_quality(p) for p in configured.values()):
        return []
    change = ctx.change.id
    return [
        DoctorFinding(
            "quality-lanes-not-configured",
            f"{QUALITY_FILE} exists and the change requires static-analysis, but no configured "
            "provider runs its lanes; the derived one is only a preview",
            f"configure it in execution.yaml (static-analysis: {{adapter: command, command: "
            f"[changeloop, quality, run, --change, {change}]}}) and pilot it with "
            f"`changeloop quality run --change {change}` until every lane is green for the "
            "right reasons",
            f"changeloop quality run --change {shlex.quote(change)}",
            severity="info",
            capability="static-analysis",
        )
    ]

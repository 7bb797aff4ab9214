"""Derived wiring's use of consumer-quality lanes: one provider in place of the linters."""

from __future__ import annotations

from typing import TYPE_CHECKING

from changeloop.detect.derive import required
from changeloop.model import Provider
from changeloop.quality.lanes import QUALITY_FILE, quality_command

if TYPE_CHECKING:
    from changeloop.detect.types import ChangeContext


def prefer_quality_lanes(
    ctx: ChangeContext, found: dict[str, tuple[Provider, str]]
) -> dict[str, tuple[Provider, str]]:
    """With a quality file and ``static-analysis`` required, derive one command provider
    running the lanes in place of the per-repository linters. It only runs the lanes the
    project committed — it never stands for a result by itself."""
    if not (ctx.root / QUALITY_FILE).is_file():
        return found
    if not required(ctx.evidence, ctx.repositories).get("static-analysis"):
        return found
    configured = ctx.execution.providers if ctx.execution else {}
    if any(
        p.capability == "static-analysis" or name == "static-analysis"
        for name, p in configured.items()
    ):
        return found
    kept = {n: v for n, v in found.items() if v[0].capability != "static-analysis"}
    repo = next(iter(ctx.repositories)) if len(ctx.repositories) == 1 else None
    if repo is None:  # the lanes run from the workspace root: the repository holding openspec/
        repo = next(
            (n for n, r in ctx.repositories.items() if r.path == ctx.root.resolve()),
            next(iter(ctx.repositories)),
        )
    kept["static-analysis"] = (
        Provider(
            name="static-analysis",
            adapter="command",
            capability="static-analysis",
            repository=repo,
            command=quality_command(ctx.change.id),
            origin="derived",
            confidence="high",
        ),
        f"{QUALITY_FILE} (static-analysis requested)",
    )
    return kept

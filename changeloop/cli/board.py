"""What ``prove`` shows: live progress while running, then the board.

Progress lines go to stderr as events arrive (queued, waiting on a resource,
running, done), so a long run is never silent and a log of it reads well; the
final board lists every claim and provider with the reason for anything not
green.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, TextIO

from changeloop.text import escape_controls

if TYPE_CHECKING:  # the views stay light: a re-prove answered from its record imports no engine
    from changeloop.engine import ProveResult
    from changeloop.masking import Masker
    from changeloop.model import Plan
    from changeloop.run.records import RunEvent

_ICON = {"pass": "✔", "fail": "✘", "inconclusive": "?"}
_CLAIM_ICON = {"proven": "✔", "failed": "✘", "inconclusive": "?", "unproven": "·"}


class Progress:
    def __init__(self, plan: Plan, out: TextIO) -> None:
        self.out = out
        self.total = len(plan.providers)
        self.done = 0
        self.start = time.monotonic()

    def event(self, event: RunEvent) -> None:
        provider, kind, detail = event.provider, event.kind, event.detail
        elapsed = time.monotonic() - self.start
        if kind == "started":
            line = f"  ▶ {provider} running"
        elif kind == "cached":
            line = f"  ↺ {provider} reused a cached pass (same fingerprint)"
        elif kind == "waiting":
            line = f"  … {provider} waiting for {detail}"
        elif kind in ("finished", "skipped"):
            self.done += 1
            suffix = f": {detail}" if detail else ""
            line = f"  ■ {provider} {kind}{suffix} ({self.done}/{self.total})"
        else:
            return
        self.out.write(f"[{elapsed:6.1f}s]{line}\n")
        self.out.flush()


class _Masked:
    """A text stream that passes every line through the run's masker (DESIGN §2.6)."""

    def __init__(self, out: TextIO, masker: Masker) -> None:
        self._out, self._masker = out, masker

    def write(self, text: str) -> None:
        self._out.write(self._masker.text(text))

    def flush(self) -> None:
        self._out.flush()


def render_board(result: ProveResult, stream: TextIO) -> None:
    out = _Masked(stream, result.masker)
    verdict = result.verdict
    plan = result.plan
    out.write(f"\nchange {plan.change.id}: {verdict.status.upper()}\n")
    if verdict.claims:
        out.write("claims:\n")
        for cid, claim in verdict.claims.items():
            out.write(f"  {_CLAIM_ICON[claim.status]} {cid}: {claim.status}\n")
            for reason in claim.reasons:
                out.write(f"      {one_line(reason)}\n")
    if verdict.requires:
        out.write("requires:\n")
        for capability, per_repo in verdict.requires.items():
            cells = ", ".join(f"{repo} {status}" for repo, status in per_repo.items())
            out.write(f"  {capability}: {cells}\n")
    out.write("providers:\n")
    for report in result.providers.values():
        took = f" {report.duration_ms / 1000:.1f}s" if report.state == "ran" else ""
        out.write(f"  {report.name} ({report.adapter}) {report.state}{took}\n")
        for entry in report.receipts:
            reason = f" — {one_line(entry.reason)}" if entry.reason else ""
            out.write(
                f"      {_ICON.get(entry.status, '?')} {entry.capability} {entry.status}"
                f"{counts(entry.tests)}{reason}\n"
            )
        log = _log_of(result, report.name)
        if log is not None and any(e.status != "pass" for e in report.receipts):
            out.write(f"      log: {log}\n")
    out.write(f"receipts: {result.run_dir.relative_to(plan.root)}\n")
    if not verdict.proven:
        out.write("\nNext steps:\n")
        out.write(f"  changeloop evidence doctor {plan.change.id}\n")
        out.write(f"  ls {result.run_dir.relative_to(plan.root)}  # logs and reports\n")
    out.flush()


MAX_REASON = 400


def one_line(text: str) -> str:
    """A reason as one terminal-safe line: controls escaped (a runner's cursor codes
    would eat the board), bounded in length."""
    flat = escape_controls(text.strip())
    return flat if len(flat) <= MAX_REASON else flat[: MAX_REASON - 1] + "…"


def counts(tests: dict[str, int] | None) -> str:
    """` (114 tests: 112 passed, 2 skipped)` for a receipt with counts."""
    if not tests:
        return ""
    parts = [f"{tests.get(k, 0)} {k}" for k in ("passed", "failed", "skipped") if tests.get(k)]
    return f" ({tests.get('discovered', 0)} tests: {', '.join(parts) or 'none ran'})"


def _log_of(result: ProveResult, provider: str) -> str | None:
    """The provider's log, relative to the workspace, when the run left one."""
    log = result.run_dir / provider / f"{provider}.log"
    if not log.is_file():
        return None
    try:
        return log.relative_to(result.plan.root).as_posix()
    except ValueError:
        return str(log)


def to_json(result: ProveResult) -> dict[str, Any]:
    """The ``prove --json`` document, every string through the run's masker."""
    verdict = result.verdict
    doc = {
        "version": "1",
        "root": str(result.plan.root),
        "change": result.plan.change.id,
        "changePath": str(result.plan.change.path.relative_to(result.plan.root)),
        "archived": result.plan.change.archived,
        "runId": result.run_id,
        "status": verdict.status,
        "reasons": list(verdict.reasons),
        "claims": {
            cid: {"status": c.status, "reasons": list(c.reasons)}
            for cid, c in verdict.claims.items()
        },
        "requires": {cap: dict(per) for cap, per in verdict.requires.items()},
        "providers": [
            {
                "name": r.name,
                "adapter": r.adapter,
                "repository": r.repository,
                "state": r.state,
                "origin": r.origin,
                "durationMs": r.duration_ms,
                "reason": r.reason,
                "receipts": [
                    {
                        "capability": e.capability,
                        "provider": e.provider,
                        "status": e.status,
                        "reason": e.reason,
                        "id": e.id,
                        "path": e.path,
                        "tests": e.tests,
                    }
                    for e in r.receipts
                ],
            }
            for r in result.providers.values()
        ],
    }
    masked: dict[str, Any] = result.masker.json(doc)
    return masked

"""What ``prove`` shows: live progress while running, then the board.

Progress lines go to stderr as events arrive (queued, waiting on a resource,
running, done), so a long run is never silent and a log of it reads well; the
final board lists every claim and provider with the reason for anything not
green.
"""

from __future__ import annotations

import io
import shlex
import sys
import time
from typing import TYPE_CHECKING, Any, TextIO

from changeloop.text import IMPLICIT_REPOSITORY, escape_controls

if TYPE_CHECKING:  # the views stay light: a re-prove answered from its record imports no engine
    import asyncio

    from changeloop.masking import Masker
    from changeloop.model import Plan
    from changeloop.records import ProveResult, RunEvent

_ICON = {"pass": "✔", "fail": "✘", "inconclusive": "?"}
_CLAIM_ICON = {"proven": "✔", "failed": "✘", "inconclusive": "?", "unproven": "·"}


FLUSH_S = 0.05  # progress lines reach the stream at most this late


class Progress:
    """Progress lines, written out at most every :data:`FLUSH_S` (a run of a thousand
    short providers writes its lines in a few dozen writes, not two per provider).

    A line never waits longer than that: a timer on the run's event loop writes it
    even when nothing else happens. :meth:`flush` writes what is left (the CLI
    calls it when the run ends, however it ends).
    """

    def __init__(self, plan: Plan, out: TextIO) -> None:
        self.out = out
        self.total = len(plan.providers)
        self.done = 0
        self.start = time.monotonic()
        self._lines: list[str] = []
        self._flushed = 0.0  # when lines were last written (monotonic)
        self._timer: asyncio.TimerHandle | None = None

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
        self._lines.append(f"[{elapsed:6.1f}s]{line}\n")
        self._flush_soon()

    def flush(self) -> None:
        """Write the lines not yet written, in one write."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._flushed = time.monotonic()
        if self._lines:
            text, self._lines = "".join(self._lines), []
            self.out.write(text)
            self.out.flush()

    def _flush_soon(self) -> None:
        if self.done == self.total:  # the last provider: nothing may wait for a timer now
            self.flush()
            return
        if self._timer is not None:
            return  # a write is due already
        wait = self._flushed + FLUSH_S - time.monotonic()
        if wait <= 0:
            self.flush()
            return
        # asyncio is not imported for it (~14 ms of a no-change re-prove): a running
        # event loop means asyncio is imported already, so its absence means no loop.
        running = sys.modules.get("asyncio")
        try:
            if running is None:
                raise RuntimeError("no event loop")
            loop = running.get_running_loop()
        except RuntimeError:  # not on an event loop: nothing would write it later
            self.flush()
            return
        self._timer = loop.call_later(wait, self.flush)


class _Masked:
    """A text stream that passes every line through the run's masker (DESIGN §2.6)."""

    def __init__(self, out: TextIO, masker: Masker) -> None:
        self._out, self._masker = out, masker

    def write(self, text: str) -> None:
        self._out.write(self._masker.text(text))

    def flush(self) -> None:
        self._out.flush()


def render_board(result: ProveResult, stream: TextIO) -> None:
    """The board, masked and written at once (line by line, a thousand providers cost
    two thousand writes to a line-buffered stderr)."""
    out = io.StringIO()
    _board(result, out)
    _Masked(stream, result.masker).write(out.getvalue())
    stream.flush()


def _board(result: ProveResult, out: TextIO) -> None:
    verdict = result.verdict
    plan = result.plan
    out.write(f"\nchange {plan.change.id}: {verdict.status.upper()}\n")
    if result.trust is not None:
        out.write("".join(f"{line}\n" for line in result.trust.lines()))
    if verdict.claims:
        out.write("claims:\n")
        for cid, claim in verdict.claims.items():
            out.write(f"  {_CLAIM_ICON[claim.status]} {cid}: {claim.status}\n")
            for reason in claim.reasons:
                out.write(f"      {one_line(reason)}\n")
    if verdict.requires:
        out.write("requires:\n")
        for capability, per_repo in verdict.requires.items():
            cells: str
            if list(per_repo) == [IMPLICIT_REPOSITORY]:  # the one unnamed repository
                cells = str(per_repo[IMPLICIT_REPOSITORY])
            else:
                cells = ", ".join(f"{repo} {status}" for repo, status in per_repo.items())
            out.write(f"  {capability}: {cells}\n")
    out.write("providers:\n")
    for report in result.providers.values():
        took = f" {report.duration_ms / 1000:.1f}s" if report.state == "ran" else ""
        out.write(f"  {report.name} ({report.adapter}) {report.state}{took}\n")
        provider = plan.providers.get(report.name)
        for entry in report.receipts:
            reason = f" — {one_line(entry.reason)}" if entry.reason else ""
            shown = (
                found(entry.tests, provider.minimum if provider else 1)
                if entry.capability == "discovery"
                else counts(entry.tests)
            )
            out.write(
                f"      {_ICON.get(entry.status, '?')} {entry.capability} {entry.status}"
                f"{shown}{reason}\n"
            )
        if any(e.status != "pass" for e in report.receipts):  # a stat only where it is shown
            log = _log_of(result, report.name)
            if log is not None:
                out.write(f"      log: {log}\n")
    out.write(f"receipts: {result.run_dir.relative_to(plan.root)}\n")
    out.write("\nNext steps:\n")
    change = shlex.quote(plan.change.id)  # pasted into a shell: a change id is one word
    if not verdict.proven:
        out.write(f"  changeloop evidence doctor {change}\n")
        out.write(
            f"  ls {shlex.quote(str(result.run_dir.relative_to(plan.root)))}  # logs and reports\n"
        )
    else:  # OpenSpec's convention: human output ends with commands to paste
        out.write(f"  changeloop gate {change}    # re-check before merge or archive\n")
        out.write(f"  changeloop report {change}  # the evidence as one HTML page\n")


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


def found(tests: dict[str, int] | None, minimum: int) -> str:
    """What discovery adds to the test receipt: `` (12 tests found, minimum 1)`` — the
    floor the tests that ran must reach, so a suite that shrinks to nothing fails."""
    if not tests:
        return f" (minimum {minimum})"
    total = tests.get("discovered", 0)
    ran = tests.get("passed", 0) + tests.get("failed", 0)
    if ran == total:
        return f" ({total} tests found, minimum {minimum})"
    return f" ({total} tests found, {ran} ran, minimum {minimum})"


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
    if result.trust is not None:
        doc["trust"] = result.trust.to_json()
        doc["findings"] = result.trust.findings()
    masked: dict[str, Any] = result.masker.json(doc)
    return masked

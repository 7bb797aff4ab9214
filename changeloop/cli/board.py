"""What ``prove`` shows: live progress while running, then the board.

Progress lines go to stderr as events arrive (queued, waiting on a resource,
running, done), so a long run is never silent and a log of it reads well; the
final board lists every claim and provider with the reason for anything not
green.
"""

from __future__ import annotations

import io
import math
import os
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from changeloop.cli.common import Step, shown, steps_text
from changeloop.cli.failures import last_meaningful_line
from changeloop.cli.live_counts import LogCounter
from changeloop.text import IMPLICIT_REPOSITORY, escape_controls

if TYPE_CHECKING:  # the views stay light: a re-prove answered from its record imports no engine
    import asyncio
    from collections.abc import Mapping, Sequence

    from changeloop.model import Plan
    from changeloop.records import ProveResult, ProviderReport, ReceiptEntry, RunEvent

# One icon per state, the same in the board, the live view and the report.
ICON = {"pass": "✓", "fail": "✗", "inconclusive": "?"}
CLAIM_ICON = {"proven": "✓", "failed": "✗", "blocked": "⊘", "inconclusive": "?", "unproven": "∅"}


# The scheduler's word for a finished provider, as its receipts say it everywhere else.
FINISHED_WORD = {"ok": "pass", "failed": "fail"}


def clock(seconds: float) -> str:
    """``8.2s``, ``1m05s``, ``1h02m``."""
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, secs = divmod(int(seconds), 60)
    if minutes < 60:
        return f"{minutes}m{secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


FLUSH_S = 0.05  # progress lines reach the stream at most this late
HEARTBEAT_S = 15.0  # a CI log is never silent longer than this while a provider runs
HEARTBEAT_ENV = "CHANGELOOP_HEARTBEAT_S"


def heartbeat_interval() -> float:
    """:data:`HEARTBEAT_S`, or ``$CHANGELOOP_HEARTBEAT_S`` (bounded to 0.1 s – 1 h)."""
    try:
        value = float(os.environ.get(HEARTBEAT_ENV, HEARTBEAT_S))
    except ValueError:
        return HEARTBEAT_S
    return HEARTBEAT_S if math.isnan(value) else min(max(value, 0.1), 3600.0)


class Progress:
    """Progress lines, written out at most every :data:`FLUSH_S` (a run of a thousand
    short providers writes its lines in a few dozen writes, not two per provider).

    A line never waits longer than that: a timer on the run's event loop writes it
    even when nothing else happens. While a provider runs, a heartbeat line every
    :func:`heartbeat_interval` seconds says what is still running, for how long,
    how long it usually takes and the tests counted so far. :meth:`flush` writes
    what is left (the CLI calls it when the run ends, however it ends).
    """

    def __init__(
        self, plan: Plan, out: TextIO, *, estimates: Mapping[str, float] | None = None
    ) -> None:
        self.out = out
        self.total = len(plan.providers)
        self.done = 0
        self.start = time.monotonic()
        self.estimates = dict(estimates or {})
        self.running: dict[str, tuple[float, LogCounter | None]] = {}
        self.every = heartbeat_interval()
        self._lines: list[str] = []
        self._flushed = 0.0  # when lines were last written (monotonic)
        self._timer: asyncio.TimerHandle | None = None
        self._beat: asyncio.TimerHandle | None = None

    def event(self, event: RunEvent) -> None:
        provider, kind, detail = event.provider, event.kind, event.detail
        now = time.monotonic()
        if kind == "started":
            usual = self.estimates.get(provider)
            line = f"  ▶ {provider} running" + (f" (usually ~{clock(usual)})" if usual else "")
            self.running[provider] = (now, LogCounter(Path(detail)) if detail else None)
            self._beat_soon()
        elif kind == "cached":
            line = f"  ↺ {provider} reused a cached pass (same fingerprint)"
        elif kind == "waiting":
            line = f"  … {provider} waiting for {detail}"
        elif kind in ("finished", "skipped"):
            self.done += 1
            self.running.pop(provider, None)
            word = FINISHED_WORD.get(detail or "", detail) if kind == "finished" else detail
            line = f"  ■ {provider} {kind}{f': {word}' if word else ''} ({self.done}/{self.total})"
        else:
            return
        self._lines.append(f"[{now - self.start:6.1f}s]{line}\n")
        self._flush_soon()

    def heartbeat(self) -> None:
        """One line naming what still runs (called every :attr:`every` seconds)."""
        self._beat = None
        if not self.running:
            return
        now = time.monotonic()
        parts = []
        for name, (began, counter) in self.running.items():
            extra = []
            usual = self.estimates.get(name)
            if usual:
                extra.append(f"usually ~{clock(usual)}")
            if counter is not None:
                counter.poll()
                if counter.text():
                    extra.append(f"{counter.text()} so far")
            parts.append(
                f"{name} {clock(now - began)}" + (f" ({'; '.join(extra)})" if extra else "")
            )
        self._lines.append(f"[{now - self.start:6.1f}s]  … still running: {', '.join(parts)}\n")
        self.flush()
        self._beat_soon()

    def _beat_soon(self) -> None:
        if self._beat is not None:
            return
        loop = _running_loop()
        if loop is not None:
            self._beat = loop.call_later(self.every, self.heartbeat)

    def close(self) -> None:
        """Stop the heartbeat and write what is left (the run ended, however it ended)."""
        if self._beat is not None:
            self._beat.cancel()
            self._beat = None
        self.running.clear()
        self.flush()

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
        loop = _running_loop()
        if loop is None:  # not on an event loop: nothing would write it later
            self.flush()
            return
        self._timer = loop.call_later(wait, self.flush)


def _running_loop() -> asyncio.AbstractEventLoop | None:
    """The running event loop, if any. asyncio is not imported for it (a cost on
    the no-change re-prove): a running loop means asyncio is imported already."""
    running = sys.modules.get("asyncio")
    if running is None:
        return None
    try:
        loop: asyncio.AbstractEventLoop = running.get_running_loop()
    except RuntimeError:
        return None
    return loop


def render_board(
    result: ProveResult,
    stream: TextIO,
    steps: Sequence[Step] = (),
    *,
    colour: TextIO | None = None,
) -> None:
    """The board, masked and written at once (line by line, a thousand providers cost
    two thousand writes to a line-buffered stderr).

    ``colour``: the terminal itself, to write the verdict word in colour — around the
    escaping ``stream`` (which would print the colour codes as text), and only that word.
    """
    out = io.StringIO()
    _board(result, out)
    out.write(steps_text(list(steps)))
    text = result.masker.text(out.getvalue())
    word = VERDICT_WORD[result.verdict.proven]
    head, found, tail = text.partition(f": {word}\n")
    if colour is None or not found:
        stream.write(text)
    else:
        stream.write(f"{head}: ")
        stream.flush()
        colour.write(f"\x1b[1;{'32' if result.verdict.proven else '31'}m{word}\x1b[0m")
        colour.flush()
        stream.write(f"\n{tail}")
    stream.flush()


VERDICT_WORD = {True: "PROVEN", False: "NOT PROVEN"}
MAX_FAILURES = 5  # failing tests named per receipt, as pytest's short summary does


def _board(result: ProveResult, out: TextIO) -> None:
    verdict = result.verdict
    plan = result.plan
    word = VERDICT_WORD[verdict.proven]
    out.write(f"\nchange {plan.change.id}: {word}\n")
    if result.trust is not None:
        out.write("".join(f"{line}\n" for line in result.trust.lines()))
    if verdict.claims:
        out.write("claims:\n")
        for cid, claim in verdict.claims.items():
            reasons = [_own(plan, cid, r) for r in claim.reasons]
            first = f": {one_line(reasons[0])}" if reasons else ""
            out.write(f"  {cid} {CLAIM_ICON[claim.status]} {claim.status}{first}\n")
            for reason in reasons[1:]:
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
        failing = any(e.status != "pass" for e in report.receipts)
        log = log_of(result, report.name) if failing else None  # a stat only where shown
        named = False  # the failing tests once per provider (test and discovery share a run)
        provider = plan.providers.get(report.name)
        for entry in report.receipts:
            said = _reason(entry, log)
            aside = ""
            if entry.status != "pass" and advisory(result, entry.capability):
                aside = f" (advisory: nothing requires {entry.capability})"
            tally = (
                found(entry.tests, provider.minimum if provider else 1)
                if entry.capability == "discovery"
                else counts(entry.tests)
            )
            out.write(
                f"      {ICON.get(entry.status, '?')} {entry.capability} {entry.status}"
                f"{tally}{aside}{f' — {one_line(said)}' if said else ''}\n"
            )
            for note in outside_entry(entry.view.citations):
                out.write(f"        note: {one_line(note)}\n")
            if entry.status != "pass" and not named:
                named = bool(entry.view.failures)
                for line in failure_lines(entry):
                    out.write(f"        {line}\n")
        if log is not None:
            out.write(f"      log: {shown(log)}\n")
    for finding in drift_findings(result):
        out.write(f"warning: {one_line(str(finding['message']))}\n")
    out.write(f"receipts: {shown(result.run_dir)}\n")


def _own(plan: Plan, cid: str, reason: str) -> str:
    """A reason without its ``<capability>: `` prefix when the claim requires only that one."""
    claim = plan.evidence.claims.get(cid)
    if claim is not None and len(claim.requires) == 1:
        return reason.removeprefix(f"{claim.requires[0]}: ")
    return reason


def _reason(entry: ReceiptEntry, log: Path | None) -> str | None:
    """The receipt's reason; for a run that died before reporting any test, what its
    output said last (``No module named pytest``), not only that no report exists."""
    if entry.status == "pass" or entry.tests is not None or log is None:
        return entry.reason
    said = last_meaningful_line(log)
    if not said or (entry.reason and said in entry.reason):
        return entry.reason
    return f"{entry.reason}: {said}" if entry.reason else said


def failure_lines(entry: ReceiptEntry) -> list[str]:
    """``FAILED <test> - <first line>``, the first few, as pytest's short summary."""
    failures = entry.view.failures
    lines = [f"FAILED {test}{f' - {one_line(msg)}' if msg else ''}" for test, msg in failures]
    if len(lines) > MAX_FAILURES:
        lines = [*lines[:MAX_FAILURES], f"… and {len(lines) - MAX_FAILURES} more failed"]
    return lines


def outside_entry(citations: Mapping[str, Sequence[Mapping[str, object]]]) -> list[str]:
    """Citing tests that also ran production code no entry point reached, per claim."""
    out = []
    for claim, cites in sorted(citations.items()):
        tests = [str(c.get("test")) for c in cites if c.get("reached_outside_entry") is True]
        if tests:
            shown = ", ".join(tests[:3]) + (f" and {len(tests) - 3} more" if len(tests) > 3 else "")
            out.append(
                f"claim {claim}: {shown} also ran production code no entry point reached "
                "(reached_outside_entry)"
            )
    return out


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


def log_of(result: ProveResult, provider: str) -> Path | None:
    """The provider's log, when the run left one."""
    log = result.run_dir / provider / f"{provider}.log"
    return log if log.is_file() else None


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
                "detection": detection(result, r),
                "receipts": [
                    {
                        "capability": e.capability,
                        "provider": e.provider,
                        "status": e.status,
                        "reason": e.reason,
                        "id": e.id,
                        "path": e.path,
                        "tests": e.tests,
                        "advisory": advisory(result, e.capability),
                    }
                    for e in r.receipts
                ],
            }
            for r in result.providers.values()
        ],
    }
    findings: list[Any] = []
    if result.trust is not None:
        doc["trust"] = result.trust.to_json()
        findings = list(result.trust.findings())
        doc["findings"] = findings
    drift = drift_findings(result)
    if drift:
        doc["findings"] = [*findings, *drift]
    masked: dict[str, Any] = result.masker.json(doc)
    return masked


def detection(result: ProveResult, report: ProviderReport) -> dict[str, Any] | None:
    """The framework a provider ran: where it was detected and the version the run saw."""
    from changeloop.detect.repository import provider_detection

    provider = result.plan.providers.get(report.name)
    if provider is None:
        return None
    seen = next((e.observer.get("version") for e in report.receipts if e.observer), None)
    found = provider_detection(provider, seen)
    return found.to_json() if found is not None else None


def advisory(result: ProveResult, capability: str) -> bool:
    """Whether nothing requires this capability (a mutation score, say): its receipt informs,
    and a fail there does not decide the verdict."""
    evidence = result.plan.evidence
    if capability in evidence.requires:
        return False
    return not any(capability in claim.requires for claim in evidence.claims.values())


def drift_findings(result: ProveResult) -> list[dict[str, Any]]:
    """Tool-contract drift the last ``adapters check`` recorded for this change's tools."""
    from changeloop.contracts.drift import recorded_drift

    repos = {name: repo.path for name, repo in result.plan.repositories.items()}
    return [f.to_json() for f in recorded_drift(result.plan.root, repos)]

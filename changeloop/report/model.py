"""The report's view-model: plain frozen records the renderer turns into HTML.

Nothing here reads files or verifies anything: :mod:`changeloop.report.collect`
fills these from ``gate``'s results and the run's ``run.json``, and
:mod:`changeloop.report.render` only formats them, so the renderer can be
tested on hand-made records.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

# A cell says what the claim says for that capability: the claim states, one word each,
# the same words as the board, `prove --json` and `gate --json`. Why (a stale or an
# unverified receipt, the failing test) is the cell's cause, shown beside the word.
CellStatus = Literal["proven", "failed", "blocked", "inconclusive", "unproven"]

# Words and icons first: colour only repeats what they say (WCAG 1.4.1).
CELL_LABELS: Mapping[str, tuple[str, str]] = {
    "proven": ("✓", "proven"),
    "failed": ("✗", "failed"),
    "blocked": ("⊘", "blocked"),
    "inconclusive": ("?", "inconclusive"),
    "unproven": ("∅", "unproven"),
}
# What a receipt gate set aside says about a cell, before its reason.
ASIDE_WORDS: Mapping[str, str] = {
    "unverified": "not verified",
    "stale-content": "stale: content changed",
    "stale-wiring": "stale: wiring changed",
}


@dataclass(frozen=True)
class ReceiptRef:
    """One receipt behind a cell or provider: who signed it and whether it verified."""

    id: str | None  # sha256:… of the payload; None when the envelope did not verify
    provider: str
    capability: str | None
    status: str | None  # pass | fail | inconclusive (only when verified)
    path: str  # relative to the workspace root
    issuer: str | None
    keyid: str | None
    verified: bool
    problem: str | None = None  # why it was set aside
    code: str | None = None  # gate's reason code when set aside: unverified, stale-content, …


@dataclass(frozen=True)
class Cell:
    capability: str
    status: CellStatus
    reasons: tuple[str, ...] = ()
    cause: str | None = None  # one line, shown in the cell when it is not proven
    receipts: tuple[ReceiptRef, ...] = ()
    tests: tuple[str, ...] = ()  # crediting tests, where the receipt names them
    grounding: str | None = None
    mutation: str | None = None


@dataclass(frozen=True)
class ClaimRow:
    id: str
    statement: str | None
    ref: str | None
    status: str  # the claim's verdict (gate's)
    cells: Mapping[str, Cell | None]  # capability -> cell; None when not required


@dataclass(frozen=True)
class RequireRow:
    capability: str
    repository: str
    status: str  # pass | fail | inconclusive | missing


@dataclass(frozen=True)
class RepoIdentity:
    name: str
    tree: str
    head: str | None
    dirty: bool


@dataclass(frozen=True)
class Counts:
    discovered: int
    passed: int
    failed: int
    skipped: int


@dataclass(frozen=True)
class ProviderRow:
    name: str
    adapter: str | None
    repository: str | None
    state: str  # ran | cached | shared | not-run | unknown
    status: str | None  # worst receipt status, or None when no receipt verified
    duration_ms: int | None
    tests: Counts | None
    findings: int
    log: str | None  # relative to the workspace root
    log_href: str | None  # relative to the report file
    issuer: str | None
    verified: Literal["verified", "not verified", "stale", "no receipt"]
    receipts: tuple[ReceiptRef, ...] = ()
    services: tuple[str, ...] = ()  # each service it needs, with its readiness probe


@dataclass(frozen=True)
class Bar:
    provider: str
    slot: int
    start_s: float  # seconds after the run started
    end_s: float
    status: str  # pass | fail | inconclusive | unknown
    critical: bool = False


@dataclass(frozen=True)
class Timeline:
    slots: int
    total_s: float
    bars: tuple[Bar, ...]
    not_drawn: tuple[tuple[str, str], ...] = ()  # (provider, why): cached, not run
    source: str = "run.json"  # or "receipts" when the run left no run.json


@dataclass(frozen=True)
class FindingItem:
    kind: str
    message: str
    severity: str | None
    provider: str  # the provider whose receipts carry it (each finding is listed once)
    location: str | None  # path:line relative to the workspace root
    href: str | None  # relative to the report file


@dataclass(frozen=True)
class Report:
    change: str
    proven: bool
    reasons: tuple[str, ...]  # change-level: why not proven
    repositories: tuple[RepoIdentity, ...]
    run_id: str | None
    run_started: str | None
    version: str
    capabilities: tuple[str, ...]
    claims: tuple[ClaimRow, ...]
    requires: tuple[RequireRow, ...]
    providers: tuple[ProviderRow, ...]
    timeline: Timeline | None
    findings: Mapping[str, tuple[FindingItem, ...]]
    set_aside: tuple[ReceiptRef, ...] = field(default_factory=tuple)
    next_steps: tuple[tuple[str, str], ...] = ()  # (what to do, the command), in order
    trust: str = "this checkout"  # where the keys came from (changeloop.trust, `describe`)
    trust_changed: tuple[str, ...] = ()  # each trust-changed finding's message

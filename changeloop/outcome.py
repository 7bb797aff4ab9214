"""What an adapter says about one provider: its outcomes, findings, test counts and observer.

These records cross every stage (adapters make them, the run seals them, the
board and the report show them), so they sit below all of their users.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from changeloop.model import ClaimMark, Provider, Status


@dataclass(frozen=True)
class Finding:
    """docs/design.md: ``{kind, message, severity?, file?, line?}``."""

    kind: str
    message: str
    severity: str | None = None
    file: str | None = None
    line: int | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "message": self.message}
        if self.severity is not None:
            out["severity"] = self.severity
        if self.file is not None:
            out["file"] = self.file
        if self.line is not None:
            out["line"] = self.line
        return out


@dataclass(frozen=True)
class TestCounts:
    discovered: int
    passed: int
    failed: int
    skipped: int

    def to_json(self) -> dict[str, int]:
        return {
            "discovered": self.discovered,
            "passed": self.passed,
            "failed": self.failed,
            "skipped": self.skipped,
        }


@dataclass(frozen=True)
class Observer:
    """Which tool observed the evidence (receipt ``observer``)."""

    adapter: str
    tool: str | None = None
    version: str | None = None


@dataclass(frozen=True)
class Outcome:
    """One receipt's worth of result, before the engine signs it."""

    capability: str
    status: Status
    reason: str | None = None
    provider: str | None = None  # receipt issued under another name (discoveryProvider)
    claims: Mapping[str, ClaimMark] = field(default_factory=dict)
    tests: TestCounts | None = None
    passed_tests: tuple[str, ...] = ()
    failed_tests: tuple[str, ...] = ()
    findings: tuple[Finding, ...] = ()
    exit_code: int | None = None
    observer: Observer | None = None
    input_mode: str | None = None
    command: tuple[str, ...] | None = None  # effective command, when one ran
    details: Mapping[str, Any] = field(default_factory=dict)  # adapter-specific, JSON-able
    issuer: str | None = None  # external: the accepted receipt's issuer
    url: str | None = None
    # claim -> [{test, depth, ref, result, grounding}], and claim -> {total, killed}
    citations: Mapping[str, tuple[Mapping[str, Any], ...]] = field(default_factory=dict)
    mutation: Mapping[str, Mapping[str, int]] = field(default_factory=dict)


def mark_listed_claims(provider: Provider, outcome: Outcome) -> Outcome:
    """The one claim rule for every adapter: a provider's own ``claims`` follow its status.

    Fail ⇒ each listed claim ``failed``; inconclusive ⇒ none of them credited (a
    ``failed`` mark from a test citing it stands); pass ⇒ ``credited`` unless the
    adapter marked it itself (grounding may leave a listed claim uncredited, docs/grounding.md).
    Sealing applies it to every outcome (run/seal.py).
    """
    if not provider.claims:
        return outcome
    claims = dict(outcome.claims)
    for cid in provider.claims:
        mark = claims.get(cid)
        if outcome.status == "fail":
            claims[cid] = "failed"
        elif outcome.status == "inconclusive":
            claims[cid] = "failed" if mark == "failed" else "uncredited"
        elif mark is None:
            claims[cid] = "credited"
    return replace(outcome, claims=claims)

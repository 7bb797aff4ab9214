"""What ``gate`` reads and what it decides: plain frozen records, no I/O.

Reading (:mod:`changeloop.gate.read`) makes :class:`ReadEnvelope`, :class:`Kept`
and :class:`SetAside`; judging (:mod:`changeloop.gate.judge`) turns them into a
:class:`GateResult`, whose ``to_json`` is the ``gate --json`` document.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from changeloop.model import Plan
from changeloop.signing.verify import Verified
from changeloop.verdict import ReceiptView, Verdict

ReasonCode = Literal[
    "no-receipt",
    "stale-content",
    "stale-wiring",
    "stale-environment",
    "failed",
    "inconclusive",
    "unverified",
]
Source = Literal["local", "committed"]


@dataclass(frozen=True)
class Reason:
    code: ReasonCode
    message: str

    def to_json(self) -> dict[str, str]:
        return {"code": self.code, "message": self.message}


@dataclass(frozen=True)
class ReadEnvelope:
    """One envelope file gate read, whatever became of it (a VSA input attestation)."""

    path: Path
    uri: str  # relative to the workspace root
    sha256: str  # of the file's bytes
    source: Source


@dataclass(frozen=True)
class SetAside:
    """A receipt that does not count, and why."""

    envelope: ReadEnvelope
    code: ReasonCode
    message: str
    capability: str | None  # None when nothing trustworthy says which
    repositories: tuple[str, ...] = ()
    fatal: bool = True  # an envelope that does not verify fails the gate closed


@dataclass(frozen=True)
class Kept:
    envelope: ReadEnvelope
    verified: Verified
    view: ReceiptView


@dataclass(frozen=True)
class Reading:
    """Everything reading found, before any judgement (the input of ``judge``)."""

    read: tuple[ReadEnvelope, ...]
    kept: tuple[Kept, ...]
    set_aside: tuple[SetAside, ...]
    trees: Mapping[bool, Mapping[str, str]] = field(default_factory=dict)


@dataclass(frozen=True)
class ClaimGate:
    status: str
    reasons: tuple[Reason, ...]


@dataclass(frozen=True)
class GateResult:
    plan: Plan
    verdict: Verdict
    claims: Mapping[str, ClaimGate]
    requires: Mapping[str, Mapping[str, str]]
    reasons: tuple[Reason, ...]  # change-level (requires, unverified envelopes)
    read: tuple[ReadEnvelope, ...]
    kept: tuple[Kept, ...]
    set_aside: tuple[SetAside, ...]
    trees: Mapping[bool, Mapping[str, str]] = field(default_factory=dict)

    @property
    def proven(self) -> bool:
        return self.verdict.proven and not any(
            s.code == "unverified" and s.fatal for s in self.set_aside
        )

    @property
    def status(self) -> str:
        return "proven" if self.proven else "not-proven"

    def to_json(self) -> dict[str, Any]:
        return {
            "version": "1",
            "change": self.plan.change.id,
            "status": self.status,
            "claims": {
                cid: {"status": c.status, "reasons": [r.to_json() for r in c.reasons]}
                for cid, c in self.claims.items()
            },
            "requires": {cap: dict(per) for cap, per in self.requires.items()},
            "reasons": [r.to_json() for r in self.reasons],
            "receipts": [
                {
                    "path": k.envelope.uri,
                    "id": k.verified.id,
                    "provider": k.view.provider,
                    "capability": k.view.capability,
                    "status": k.view.status,
                }
                for k in self.kept
            ],
            "setAside": [
                {"path": s.envelope.uri, "code": s.code, "message": s.message}
                for s in self.set_aside
            ],
        }

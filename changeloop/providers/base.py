"""The interface every adapter module implements, and the records it returns.

An adapter is a plain module exposing the names of :class:`Adapter` (the
pre-commit idea: mypy checks each module against this Protocol, and
``registry.ADAPTERS`` is a literal dict — no plug-in discovery).

An adapter's ``run`` turns one provider into one :class:`Outcome` per receipt
it issues; the engine adds everything generic (fingerprint, subjects, timing,
log digest, signature) when it turns outcomes into receipts.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

from changeloop.errors import Problem
from changeloop.model import ClaimMark, ContentIdentity, Plan, Provider, Status
from changeloop.processes import ProcessResult


@dataclass(frozen=True)
class Finding:
    """DESIGN.md §2.5: ``{kind, message, severity?, file?, line?}``."""

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
    # DESIGN.md §11: claim -> [{test, depth, ref, result, grounding}], and claim -> {total, killed}
    citations: Mapping[str, tuple[Mapping[str, Any], ...]] = field(default_factory=dict)
    mutation: Mapping[str, Mapping[str, int]] = field(default_factory=dict)


RunCommand = Callable[..., Awaitable[ProcessResult]]


@dataclass(frozen=True)
class RunContext:
    """Everything an adapter may use while running one provider."""

    plan: Plan
    provider: Provider
    workdirs: Mapping[str, Path]  # repository -> where it runs (sandbox or in place)
    sources: Mapping[str, Path]  # repository -> the user's checkout (external reads here)
    identities: Mapping[str, ContentIdentity]  # repository -> content identity
    run_dir: Path  # this provider's own directory under .changeloop/runs/<run-id>/
    env: Mapping[str, str]  # caller env + provider env + envFrom, ready to pass on
    secrets: tuple[str, ...]  # envFrom values: redact from anything written
    now: datetime
    # run_command(argv, cwd=Path, env=Mapping, timeout_ms=int, log_name=str) -> ProcessResult
    run_command: RunCommand

    def claims_requiring(self, capability: str) -> tuple[str, ...]:
        """Claims that need ``capability`` and may be credited from this repository."""
        repo = self.provider.repository
        out = []
        for claim in self.plan.evidence.claims.values():
            if capability not in claim.requires:
                continue
            if claim.repository is not None and repo is not None and claim.repository != repo:
                continue
            out.append(claim.id)
        return tuple(sorted(out))


class Adapter(Protocol):
    """What each module under ``changeloop/providers/`` exposes."""

    NAME: str
    DEFAULT_CAPABILITY: str
    RUNS_COMMAND: bool  # False for adapters that execute nothing (contract-digest, external)

    def default_resources(self, provider: Provider, plan: Plan) -> tuple[str, ...]: ...

    def repositories(self, provider: Provider, plan: Plan) -> tuple[str, ...]:
        """Repositories whose content this provider's result depends on (its subjects)."""
        ...

    def capabilities(self, provider: Provider) -> tuple[str, ...]:
        """Capabilities of the receipts it issues, in order."""
        ...

    def effective_command(self, provider: Provider) -> tuple[str, ...] | None: ...

    def fingerprint_inputs(self, provider: Provider) -> Mapping[str, Any]:
        """Adapter-specific wiring the result depends on (JSON-able)."""
        ...

    def preflight(self, provider: Provider, plan: Plan) -> Sequence[Problem]: ...

    async def run(self, ctx: RunContext) -> list[Outcome]: ...


def missing_command(provider: Provider, example: str) -> list[Problem]:
    """The preflight problem of an adapter that runs a command but was given none."""
    if provider.command:
        return []
    return [
        Problem(
            code="missing_command",
            message=f"provider '{provider.name}' (adapter {provider.adapter}) has no command",
            location=provider.location,
            fix=f"add `command: {example}`",
            providers=(provider.name,),
        )
    ]

"""Sealing: a provider's outcomes become signed receipts, as records. Pure: nothing is written.

Example::

    sealer = Sealer.of(plan, key=key, masker=masker, sandbox="none", issuer="local",
                       url=None, run_rel=".changeloop/runs/<id>")
    entry = sealer.seal(provider, outcome, Timing.now(), bound)   # one ReceiptEntry
    report = sealer.ran(provider, outcomes, timing, bound, duration_ms=812, cacheable=True)
    report = reused(provider, verified, origin="local", run_rel=...)   # a cached pass

Every outcome passes through :meth:`Sealer.seal`: its provider's listed claims
are marked (``outcome.mark_listed_claims``), links leaving a repository become
findings, everything is masked, and the in-toto statement is signed. A reused
pass (the local cache, the shared cache, the no-change answer) is the original
envelope, byte for byte, made into the same record by :func:`reused`.
Writing the records is :mod:`changeloop.run.writer`'s job.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from changeloop.masking import Masker
from changeloop.model import ContentIdentity, Plan, Provider, Status
from changeloop.outcome import Finding, Observer, Outcome, TestCounts, mark_listed_claims
from changeloop.records import ProviderReport, ReceiptEntry
from changeloop.run.symlink_findings import with_symlink_findings
from changeloop.signing.jcs import canonicalize
from changeloop.signing.statement import (
    ReceiptFacts,
    build_statement,
    configuration_digests,
    seal,
    sha256_hex,
)
from changeloop.verdict import ReceiptView, failures_of

__all__ = ["Bound", "Sealer", "Timing", "Verified", "every_capability", "reused"]

Verified = Sequence[tuple[bytes, bytes, dict[str, Any]]]  # (envelope, payload, its extension)


@dataclass(frozen=True)
class Timing:
    started: datetime
    finished: datetime
    log_sha256: str | None = None
    log_tail: str | None = None
    executor: Mapping[str, str] | None = None  # where its command ran; None: this machine

    @classmethod
    def now(cls) -> Timing:
        now = datetime.now(UTC)
        return cls(now, now)


@dataclass(frozen=True)
class Bound:
    """What one provider's receipts are bound to, computed by the run before sealing."""

    fingerprint: str
    wiring: str
    identities: Mapping[str, ContentIdentity]  # repository -> content identity
    external_links: Mapping[str, Mapping[str, str]] = field(default_factory=dict)


@dataclass(frozen=True)
class Sealer:
    """Everything sealing needs that is the same for a whole run."""

    plan: Plan
    key: Any  # the private key that signs this run's receipts
    masker: Masker
    sandbox: str
    issuer: str
    url: str | None
    run_rel: str  # the run directory, relative to the workspace root
    config_digests: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, plan: Plan, **kwargs: Any) -> Sealer:
        return cls(plan=plan, config_digests=configuration_digests(plan, None), **kwargs)

    def seal(
        self, provider: Provider, outcome: Outcome, timing: Timing, bound: Bound
    ) -> ReceiptEntry:
        """One outcome as a signed receipt record."""
        outcome = mark_listed_claims(provider, self.masker.outcome(outcome))
        settled = provider.settled
        repos = settled.repositories
        outcome = with_symlink_findings(
            outcome, repos, self.plan, lambda repo: bound.external_links.get(repo, {}), self.masker
        )
        command = outcome.command or settled.command
        configuration = dict(self.config_digests)
        if command:
            configuration["command"] = sha256_hex(canonicalize(list(command)))
        facts = ReceiptFacts(
            change=self.plan.change.id,
            provider=outcome.provider or provider.name,
            adapter=provider.adapter,
            fingerprint=bound.fingerprint,
            subjects={repo: bound.identities[repo] for repo in repos},
            sandbox=self.sandbox,
            issuer=self.issuer,  # who signs this receipt; an accepted one is in details
            started=timing.started,
            finished=timing.finished,
            configuration=configuration,
            log_sha256=timing.log_sha256,
            log_tail=self.masker.text(timing.log_tail or ""),
            url=outcome.url or self.url,
            wiring=bound.wiring,
            executor=timing.executor or {"kind": "local"},
        )
        sealed = seal(self.masker.json(build_statement(facts, outcome)), self.key)
        return _entry(provider, outcome, sealed.id, sealed.envelope, self.run_rel, cached=False)

    def ran(
        self,
        provider: Provider,
        outcomes: Sequence[Outcome],
        timing: Timing,
        bound: Bound,
        *,
        duration_ms: int,
        cacheable: bool,
    ) -> ProviderReport:
        """A provider that ran: its receipts, and whether its passes may be cached."""
        entries = tuple(self.seal(provider, o, timing, bound) for o in outcomes)
        ok = all(e.status == "pass" for e in entries)
        reason = (
            None
            if ok
            else next((e.reason for e in entries if e.status != "pass" and e.reason), None)
        )
        return ProviderReport(
            provider.name,
            provider.adapter,
            provider.repository,
            state="ran",
            duration_ms=duration_ms,
            reason=reason,
            receipts=entries,
            cache=ok and bool(entries) and cacheable,
        )

    def skipped(self, provider: Provider, reason: str, bound: Bound) -> ProviderReport:
        """A provider that never ran (a dependency failed): inconclusive receipts saying why."""
        reason = self.masker.text(reason)
        outcomes = every_capability(provider, "inconclusive", f"not run: {reason}")
        entries = tuple(self.seal(provider, o, Timing.now(), bound) for o in outcomes)
        return ProviderReport(
            provider.name, provider.adapter, provider.repository, reason=reason, receipts=entries
        )

    def could_not_run(self, provider: Provider, reason: str) -> ProviderReport:
        """A provider whose job raised (its sandbox could not be made): no receipt, a note."""
        reason = self.masker.text(reason)
        notes = tuple(
            (cap, f"{cap}: provider {provider.name} could not run: {reason}")
            for cap in provider.settled.capabilities
        )
        return ProviderReport(
            provider.name, provider.adapter, provider.repository, reason=reason, notes=notes
        )


def reused(provider: Provider, verified: Verified, *, origin: str, run_rel: str) -> ProviderReport:
    """Verified pass envelopes reused byte for byte: the same record, whichever road found them.

    The local cache, the shared cache (``--cache-from``) and the no-change answer
    all come here; the receipt records the pass its envelope says (claims, input
    mode, test counts, citations, observer), with no reason.
    """
    entries = []
    for envelope, payload, ext in verified:
        cited = ext.get("citations")
        outcome = Outcome(
            capability=ext["capability"],
            status="pass",
            provider=ext["provider"],
            claims=ext.get("claims") or {},
            input_mode=ext.get("inputMode"),
            tests=_counts(ext.get("tests")),
            citations={str(k): tuple(v) for k, v in cited.items() if isinstance(v, list)}
            if isinstance(cited, dict)
            else {},
            observer=_observer(ext.get("observer")),
        )
        receipt_id = "sha256:" + hashlib.sha256(payload).hexdigest()
        entries.append(_entry(provider, outcome, receipt_id, envelope, run_rel, cached=True))
    return ProviderReport(
        provider.name,
        provider.adapter,
        provider.repository,
        state="cached",
        origin=origin,
        receipts=tuple(entries),
    )


def every_capability(
    provider: Provider, status: Status, reason: str, findings: tuple[Finding, ...] = ()
) -> list[Outcome]:
    """The same verdict for every receipt the provider would have issued."""
    return [
        Outcome(capability=c, status=status, reason=reason, findings=findings)
        for c in provider.settled.capabilities
    ]


def _entry(
    provider: Provider,
    outcome: Outcome,
    receipt_id: str,
    envelope: bytes,
    run_rel: str,
    *,
    cached: bool,
) -> ReceiptEntry:
    name = outcome.provider or provider.name
    filename = f"{name}.{outcome.capability}.json"
    view = ReceiptView(
        provider=name,
        capability=outcome.capability,
        status=outcome.status,
        repositories=provider.settled.repositories,
        reason=outcome.reason,
        claims=dict(outcome.claims),
        input_mode=outcome.input_mode,
        citations=dict(outcome.citations),
        failures=failures_of(outcome.failed_tests, [f.to_json() for f in outcome.findings])
        if outcome.failed_tests
        else (),
    )
    return ReceiptEntry(
        capability=outcome.capability,
        provider=name,
        status=outcome.status,
        reason=outcome.reason,
        id=receipt_id,
        path=f"{run_rel}/{provider.name}/{filename}",  # relative to the workspace
        view=view,
        tests=outcome.tests.to_json() if outcome.tests is not None else None,
        envelope=envelope,
        cached=cached,
        observer=observed(outcome),
    )


def observed(outcome: Outcome) -> dict[str, str] | None:
    """The runner that observed an outcome, as prove's JSON shows it (tool and version)."""
    found = outcome.observer
    if found is None or (found.tool is None and found.version is None):
        return None
    return {k: v for k, v in (("tool", found.tool), ("version", found.version)) if v is not None}


def _observer(value: Any) -> Observer | None:
    """A reused receipt's ``observer`` back as a record (None when absent or malformed)."""
    if not isinstance(value, dict) or not isinstance(value.get("adapter"), str):
        return None
    tool, version = value.get("tool"), value.get("version")
    return Observer(
        value["adapter"],
        tool if isinstance(tool, str) else None,
        version if isinstance(version, str) else None,
    )


def _counts(value: Any) -> TestCounts | None:
    """A reused receipt's ``tests`` back as counts (None when absent or malformed)."""
    keys = ("discovered", "passed", "failed", "skipped")
    if not isinstance(value, dict) or not all(type(value.get(k)) is int for k in keys):
        return None
    return TestCounts(**{k: value[k] for k in keys})

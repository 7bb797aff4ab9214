"""``ReceiptSink``: the one writer of a run's receipts.

Every outcome passes through here: its provider's listed claims are marked
(``providers.base.mark_listed_claims``), links leaving a repository become
findings, everything written is masked, the statement is sealed and signed,
written to the run directory and ``latest/``, and a provider's all-pass
envelopes go to the cache from the bytes in hand. A cached pass is reused byte
for byte. The per-provider reports and the notes for unproven capabilities
are the sink's; others read them.

Its parts: ``run/symlink_findings.py`` (the links-leaving-a-repository warnings),
``run/cache_reuse.py`` (a cache entry read back and verified), ``run/commit.py``
(the writer thread).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio

from changeloop.caching import local as cache
from changeloop.fsio import Pending
from changeloop.masking import Masker
from changeloop.model import ContentIdentity, Plan, Provider, Status
from changeloop.outcome import Finding, Outcome, mark_listed_claims
from changeloop.records import ProviderReport, ReceiptEntry
from changeloop.run.cache_reuse import cached_outcome, same_bytes, verified_passes
from changeloop.run.commit import GroupCommit
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
from changeloop.workspace.state import StateDir

_CACHE = "\0cache:"  # tag of a cache entry's group (no provider name holds a NUL)


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


class ReceiptSink:
    def __init__(
        self,
        plan: Plan,
        *,
        state: StateDir,
        run_dir: Path,
        key: Any,
        masker: Masker,
        sandbox: str,
        issuer: str,
        url: str | None,
        identity: Callable[[str], ContentIdentity],
        fingerprint: Callable[[Provider], str],
        wiring: Callable[[Provider], str],
        external_symlinks: Callable[[str], Mapping[str, str]],
    ) -> None:
        self._plan = plan
        self._state = state
        self._run_dir = run_dir
        self._key = key
        self._public_key = key.public_key()
        self.masker = masker
        self._sandbox, self._issuer, self._url = sandbox, issuer, url
        self._identity = identity
        self._fingerprint = fingerprint
        self._wiring = wiring
        self._external_symlinks = external_symlinks
        self._config_digests = configuration_digests(plan, None)
        self._reports = {
            p.name: ProviderReport(p.name, p.adapter, p.repository) for p in plan.providers.values()
        }
        self._notes: dict[str, str] = {}
        # Files go to disk in group commits off the event loop; a provider's receipt
        # entries are listed at once and withdrawn if its files cannot be written.
        self._commits = GroupCommit()
        self._staged: list[Pending] = []
        self._command_digests: dict[tuple[str, ...], str] = {}
        self._latest_text = os.fspath(state.latest(plan.change.id))
        self._run_dir_text = os.fspath(run_dir)
        self._cache_dir = state.cache
        self._run_rel = run_dir.relative_to(plan.root).as_posix()

    # -- what others read ----------------------------------------------------
    @property
    def reports(self) -> dict[str, ProviderReport]:
        return self._reports

    def notes(self) -> dict[str, str]:
        return {cap: self.masker.text(note) for cap, note in self._notes.items()}

    def views(self) -> list[ReceiptView]:
        return [e.view for report in self._reports.values() for e in report.receipts]

    def finished_word(self, name: str, scheduler_said: str | None) -> str | None:
        """How a provider's progress line ends: ``ok`` only when it has receipts and all
        passed; ``failed``, ``inconclusive``, or ``no receipt`` (an ``external`` provider
        that found none) otherwise."""
        report = self._reports.get(name)
        statuses = {entry.status for entry in report.receipts} if report else set()
        if not statuses:
            return scheduler_said if scheduler_said == "failed" else "no receipt"
        if "fail" in statuses:
            return "failed"
        return "inconclusive" if "inconclusive" in statuses else "ok"

    def durations(self) -> dict[str, float]:
        return {
            name: r.duration_ms / 1000
            for name, r in self._reports.items()
            if r.state == "ran" and name in self._plan.providers
        }

    # -- what the engine tells it --------------------------------------------
    def note(self, capability: str, text: str, *, replace_: bool = False) -> None:
        if replace_ or capability not in self._notes:
            self._notes[capability] = text

    def finish(
        self,
        provider: Provider,
        outcomes: Sequence[Outcome],
        timing: Timing,
        *,
        duration_ms: int,
        cacheable: bool,
    ) -> bool:
        """Seal a provider's outcomes; cache them when all passed. True when all passed."""
        report = self._report(provider)
        report.state = "ran"
        report.duration_ms = duration_ms
        masked = [self.masker.outcome(o) for o in outcomes]
        envelopes = [self._seal(provider, o, timing) for o in masked]
        ok = all(o.status == "pass" for o in masked)
        if not ok:
            report.reason = next(
                (o.reason for o in masked if o.status != "pass" and o.reason), None
            )
        self._submit(provider)
        if ok and envelopes and cacheable:
            self._cache(provider, envelopes)
        return ok

    def setup_failed(self, pseudo: Provider, outcome: Outcome, timing: Timing) -> None:
        self.seal(pseudo, outcome, timing)
        self._report(pseudo).state = "ran"

    async def drain(self) -> None:
        """Wait (shielded) until every receipt handed over is on disk.

        A provider whose files could not be written loses its receipts and gets a
        note naming the file, as if it could not run; the verdict reads only
        what is on disk. The engine calls this before the verdict, and when the
        run is cancelled.
        """
        with anyio.CancelScope(shield=True):
            failed = await anyio.to_thread.run_sync(self._commits.wait)
        for tag, error in failed:
            self._unwritable(tag, error)

    def remember_traced(self, repository: str, traced: Mapping[str, Any]) -> None:
        """Keep a traced test run's record for the change (mutation and --dry-run read it)."""
        from changeloop.grounding.citations import remember  # grounding imports the adapters' base

        remember(self._plan.root, self._plan.change.id, repository, traced)

    def skipped(self, provider: Provider, reason: str) -> None:
        reason = self.masker.text(reason)
        self._report(provider).reason = reason
        for outcome in every_capability(provider, "inconclusive", f"not run: {reason}"):
            self._seal(provider, outcome, Timing.now())
        self._submit(provider)

    def could_not_run(self, provider: Provider, reason: str) -> None:
        """A provider whose job raised (e.g. its sandbox could not be made): no receipt, a note."""
        reason = self.masker.text(reason)
        self._report(provider).reason = reason
        for capability in provider.settled.capabilities:
            self.note(capability, f"{capability}: provider {provider.name} could not run: {reason}")

    def seal(self, provider: Provider, outcome: Outcome, timing: Timing) -> bytes:
        """Seal and store one outcome; returns the envelope (on disk after :meth:`drain`)."""
        envelope = self._seal(provider, outcome, timing)
        self._submit(provider)
        return envelope

    def _seal(self, provider: Provider, outcome: Outcome, timing: Timing) -> bytes:
        outcome = mark_listed_claims(provider, self.masker.outcome(outcome))
        settled = provider.settled
        repos = settled.repositories
        outcome = with_symlink_findings(
            outcome, repos, self._plan, self._external_symlinks, self.masker
        )
        command = outcome.command or settled.command
        configuration = dict(self._config_digests)
        if command:
            configuration["command"] = self._command_digest(tuple(command))
        facts = ReceiptFacts(
            change=self._plan.change.id,
            provider=outcome.provider or provider.name,
            adapter=provider.adapter,
            fingerprint=self._fingerprint(provider),
            subjects={repo: self._identity(repo) for repo in repos},
            sandbox=self._sandbox,
            issuer=self._issuer,  # who signs this receipt; an accepted one is in details
            started=timing.started,
            finished=timing.finished,
            configuration=configuration,
            log_sha256=timing.log_sha256,
            log_tail=self.masker.text(timing.log_tail or ""),
            url=outcome.url or self._url,
            wiring=self._wiring(provider),
            executor=timing.executor or {"kind": "local"},
        )
        sealed = seal(self.masker.json(build_statement(facts, outcome)), self._key)
        self._store(provider, outcome, sealed.id, sealed.envelope, repositories=repos)
        return sealed.envelope

    def _command_digest(self, command: tuple[str, ...]) -> str:
        """sha256 of the command's RFC 8785 array, once per distinct command of the run."""
        digest = self._command_digests.get(command)
        if digest is None:
            digest = self._command_digests[command] = sha256_hex(canonicalize(list(command)))
        return digest

    def reuse(self, provider: Provider, fp: str) -> bool:
        """Reuse a cached pass: the original receipts, byte for byte.

        Only what this run's key signed is reused (a cache entry edited on disk,
        or signed with another key, runs the provider again).
        """
        parsed = verified_passes(self._state.cache, fp, self._public_key)
        if parsed is None:
            return False
        self.adopt(provider, parsed, origin="local")
        return True

    def adopt(
        self, provider: Provider, parsed: Sequence[tuple[bytes, bytes, dict[str, Any]]], origin: str
    ) -> None:
        """Store verified pass envelopes as this run's receipts, byte for byte (state cached)."""
        for envelope, payload, ext in parsed:
            outcome = cached_outcome(ext)
            receipt_id = "sha256:" + hashlib.sha256(payload).hexdigest()
            self._store(provider, outcome, receipt_id, envelope, cached=True)
        self._submit(provider)
        self._report(provider).state = "cached"
        self._report(provider).origin = origin

    # -- inside ----------------------------------------------------------------
    def _report(self, provider: Provider) -> ProviderReport:
        if provider.name not in self._reports:  # a repository's setup pseudo-provider
            self._reports[provider.name] = ProviderReport(
                provider.name, provider.adapter, provider.repository
            )
        return self._reports[provider.name]

    def _store(
        self,
        provider: Provider,
        outcome: Outcome,
        receipt_id: str,
        envelope: bytes,
        *,
        cached: bool = False,
        repositories: tuple[str, ...] | None = None,
    ) -> None:
        name = outcome.provider or provider.name
        filename = f"{name}.{outcome.capability}.json"
        # Strings: a Path built per file was a measurable share of a receipt (issue 15).
        run_path = os.path.join(self._run_dir_text, provider.name, filename)  # noqa: PTH118
        # A cached receipt's bytes are durable already (cache/): re-listing them needs no fsync.
        self._staged.append(Pending(run_path, envelope, durable=not cached))
        latest = os.path.join(self._latest_text, filename)  # noqa: PTH118
        if not (cached and same_bytes(Path(latest), envelope)):
            self._staged.append(Pending(latest, envelope, durable=not cached))
        view = ReceiptView(
            provider=name,
            capability=outcome.capability,
            status=outcome.status,
            repositories=(
                repositories if repositories is not None else provider.settled.repositories
            ),
            reason=outcome.reason,
            claims=dict(outcome.claims),
            input_mode=outcome.input_mode,
            citations=dict(outcome.citations),
            failures=failures_of(outcome.failed_tests, [f.to_json() for f in outcome.findings])
            if outcome.failed_tests
            else (),
        )
        entry = ReceiptEntry(
            capability=outcome.capability,
            provider=name,
            status=outcome.status,
            reason=outcome.reason,
            id=receipt_id,
            path=f"{self._run_rel}/{provider.name}/{filename}",  # relative to the workspace
            view=view,
            tests=outcome.tests.to_json() if outcome.tests is not None else None,
        )
        self._report(provider).receipts.append(entry)

    def _submit(self, provider: Provider) -> None:
        """Hand the files staged for ``provider`` to the group commit, as one group."""
        staged, self._staged = self._staged, []
        self._commits.submit(provider.name, staged)

    def _cache(self, provider: Provider, envelopes: Sequence[bytes]) -> None:
        """A provider's all-pass envelopes to the cache, in the same round as its receipts.

        Not fsynced: an entry lost or torn by a power cut fails its signature check
        on read and is a miss (``cache_reuse.verified_passes``), never a pass.
        """
        if provider.adapter in cache.NEVER_CACHED:
            return  # re-judged on every run
        # finish() calls this only when every envelope it just sealed is a pass
        target, data = cache.entry_of_passes(
            self._cache_dir, self._fingerprint(provider), envelopes
        )
        # A directory squatting on the name is damaged state: rebuilt (by the writer thread).
        entry = Pending(target, data, durable=False, displace_dir=True, supersedable=True)
        self._commits.submit(_CACHE + provider.name, [entry])

    def _unwritable(self, tag: str, error: OSError) -> None:
        """A provider whose files could not be written has no receipt, and a note why."""
        if tag.startswith(_CACHE):
            return  # an optimisation only: the next run is a miss
        report = self._reports.get(tag)
        if report is None:
            return
        lost, report.receipts = report.receipts, []
        reason = self.masker.text(f"{type(error).__name__}: {error}")
        report.reason = reason
        for capability in dict.fromkeys(e.capability for e in lost):
            self.note(
                capability, f"{capability}: provider {tag} could not run: {reason}", replace_=True
            )


def every_capability(
    provider: Provider, status: Status, reason: str, findings: tuple[Finding, ...] = ()
) -> list[Outcome]:
    """The same verdict for every receipt the provider would have issued."""
    return [
        Outcome(capability=c, status=status, reason=reason, findings=findings)
        for c in provider.settled.capabilities
    ]

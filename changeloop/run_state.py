"""The shared state of one ``prove`` run: identities, sandboxes, fingerprints, receipts.

``engine`` decides *when* things happen; this module knows *how* a provider's
content is identified, where it runs, what its fingerprint covers, and how an
outcome becomes a sealed receipt on disk (or a cached one is reused byte for
byte).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any, Literal

import anyio

from changeloop import cache, environment, fingerprint, sandboxes
from changeloop.dsse import parse_envelope, verify_signatures
from changeloop.errors import ChangeloopError
from changeloop.identity import content_identity
from changeloop.jcs import canonicalize
from changeloop.keys import load_private_key, workspace_key
from changeloop.masking import Masker
from changeloop.model import ClaimMark, ContentIdentity, Plan, Provider, SandboxMode, Status
from changeloop.providers import registry
from changeloop.providers.base import Finding, Outcome, TestCounts
from changeloop.receipts import (
    ReceiptFacts,
    build_statement,
    configuration_digests,
    seal,
    sha256_hex,
    write_atomic,
)
from changeloop.state import StateDir, ensure_gitignored
from changeloop.verdict import ReceiptView
from changeloop.wiring import wiring_digest

SCHEMA_VERSION = "changeloop/receipt@2"
ProviderState = Literal["ran", "cached", "not-run"]
MAX_SYMLINK_FINDINGS = 20


@dataclass(frozen=True)
class ProveOptions:
    jobs: int = os.cpu_count() or 2
    sandbox: SandboxMode = "none"
    fail_fast: bool = False
    use_cache: bool = True
    keep_sandbox: bool = False
    sign_key: Path | None = None
    issuer: str = "local"
    url: str | None = None


@dataclass(frozen=True)
class ReceiptEntry:
    capability: str
    provider: str
    status: str
    reason: str | None
    id: str
    path: str  # relative to the workspace root
    view: ReceiptView
    tests: dict[str, int] | None = None  # the receipt's test counts (prove --json, board)


@dataclass
class ProviderReport:
    name: str
    adapter: str
    repository: str | None
    state: ProviderState = "not-run"
    duration_ms: int = 0
    reason: str | None = None
    receipts: list[ReceiptEntry] = field(default_factory=list)


EventSink = Callable[[str, str, str | None], None]  # (provider, kind, detail)


class RunState:
    """State shared by the jobs of one run."""

    def __init__(self, plan: Plan, options: ProveOptions, on_event: EventSink | None) -> None:
        self.plan = plan
        self.options = options
        # One masker for the run: every string written passes through it (DESIGN §2.6).
        self.masker = Masker.from_plan(plan)
        sink = on_event or (lambda _p, _k, _d: None)
        self.on_event: EventSink = lambda p, k, d: sink(p, k, self.masker.optional(d))
        self.state = StateDir(plan.root)
        ensure_gitignored(plan.root)
        sandboxes.cleanup_stale(self.state.sandboxes)
        self.run_id, self.run_dir = self.state.new_run_dir()
        self.key = (
            load_private_key(options.sign_key) if options.sign_key else workspace_key(plan.root)
        )
        self.public_key = self.key.public_key()
        self.hmac_key = _hmac_key(self.key)
        self.config_digests = configuration_digests(plan, None)
        self.identities: dict[str, ContentIdentity] = {}
        self.workdirs: dict[str, Path] = {}
        self.boxes: dict[str, sandboxes.Sandbox] = {}
        self.box_locks: dict[str, anyio.Lock] = {}
        self.setup_ok: dict[str, bool] = {}
        self.fingerprints: dict[str, str] = {}
        self.wirings: dict[str, str] = {}
        self.indexes: dict[str, fingerprint.InputsIndex] = {}
        self.open_links: dict[str, dict[str, str]] = {}
        self.reports: dict[str, ProviderReport] = {
            p.name: ProviderReport(p.name, p.adapter, p.repository) for p in plan.providers.values()
        }
        self.notes: dict[str, str] = {}
        self.durations: dict[str, float] = {}

    # -- content identity and sandboxes ---------------------------------
    def identity(self, repo: str) -> ContentIdentity:
        if repo not in self.identities:
            path = self.plan.repositories[repo].path
            untracked = self.options.sandbox != "worktree"
            self.identities[repo] = content_identity(path, include_untracked=untracked)
        return self.identities[repo]

    async def workdir(self, repo: str) -> Path:
        """The repository's sandbox, made on first need and shared by its providers."""
        lock = self.box_locks.setdefault(repo, anyio.Lock())
        async with lock:
            if repo not in self.workdirs:
                repository = self.plan.repositories[repo]
                box = await anyio.to_thread.run_sync(
                    partial(
                        sandboxes.create, self.options.sandbox, repository, self.state.sandboxes
                    )
                )
                self.boxes[repo] = box
                self.workdirs[repo] = box.path
                self.identities[repo] = box.identity
        return self.workdirs[repo]

    def remove_sandboxes(self) -> None:
        if self.options.keep_sandbox:
            return
        for box in self.boxes.values():
            box.remove()

    # -- fingerprints ------------------------------------------------------
    def inputs_index(self, repo: str) -> fingerprint.InputsIndex:
        """One listing of the repository per run, shared by every provider's ``inputs``."""
        if repo not in self.indexes:
            self.indexes[repo] = fingerprint.InputsIndex(
                self.plan.repositories[repo].path, tree=self.identity(repo).tree
            )
        return self.indexes[repo]

    def external_symlinks(self, repo: str) -> dict[str, str]:
        """Links of the repository's content that resolve outside it (its identity is open)."""
        if repo not in self.open_links:
            links = self.inputs_index(repo).symlinks()
            path = self.plan.repositories[repo].path
            self.open_links[repo] = fingerprint.external_symlinks(path, links) if links else {}
        return self.open_links[repo]

    def identity_open(self, provider: Provider) -> bool:
        """True when some repository of the provider holds a link leaving it: never cached."""
        adapter = registry.ADAPTERS[provider.adapter]
        return any(self.external_symlinks(r) for r in adapter.repositories(provider, self.plan))

    def fingerprint(self, provider: Provider) -> str:
        adapter = registry.ADAPTERS[provider.adapter]
        repos = adapter.repositories(provider, self.plan)
        trees = {repo: self.identity(repo).tree for repo in repos}
        inputs_digest = None
        if provider.inputs and provider.repository:
            inputs_digest = self.inputs_index(provider.repository).digest(provider.inputs)
        env_from = {name: os.environ.get(name, "") for name in provider.env_from}
        services = [self.plan.services[s] for s in provider.services if s in self.plan.services]
        setup = [list(cmd) for repo in repos for cmd in self.plan.repositories[repo].setup]
        adapter_inputs = {
            **adapter.fingerprint_inputs(provider),
            "change": self.plan.change.id,
            "capabilities": list(adapter.capabilities(provider)),
            "claims": _claims_wiring(self.plan),
            "providerClaims": sorted(provider.claims),
            "sandbox": self.options.sandbox,
            "setup": setup,
            "issuer": self.options.issuer,
            "environment": environment.part_for(provider, self.plan, self.state.path),
        }
        fp = fingerprint.compute(
            provider=provider,
            adapter_inputs=adapter_inputs,
            effective_command=adapter.effective_command(provider),
            trees=trees,
            inputs_digest=inputs_digest,
            upstream={d: self.fingerprints.get(d, "") for d in provider.depends_on},
            env_from_values=env_from,
            hmac_key=self.hmac_key,
            services=services,
            schema_version=SCHEMA_VERSION,
            wiring=self.wiring(provider),
        )
        self.fingerprints[provider.name] = fp
        return fp

    def wiring(self, provider: Provider) -> str:
        """The provider's wiring digest (changeloop.wiring), computed once per run."""
        if self.plan.providers.get(provider.name) is not provider:
            return wiring_digest(self.plan, provider)  # e.g. a repository's setup pseudo-provider
        if provider.name not in self.wirings:
            self.wirings[provider.name] = wiring_digest(self.plan, provider)
        return self.wirings[provider.name]

    # -- receipts ----------------------------------------------------------
    def seal_outcome(
        self,
        provider: Provider,
        outcome: Outcome,
        *,
        started: datetime,
        finished: datetime,
        log_sha256: str | None,
        log_tail: str | None,
    ) -> ReceiptEntry:
        outcome = _credit_listed_claims(provider, self.masker.outcome(outcome))
        adapter = registry.ADAPTERS[provider.adapter]
        repos = adapter.repositories(provider, self.plan)
        outcome = self._with_symlink_findings(outcome, repos)
        subjects = {repo: self.identity(repo) for repo in repos}
        name = outcome.provider or provider.name
        command = outcome.command or adapter.effective_command(provider)
        configuration = dict(self.config_digests)
        if command:
            configuration["command"] = sha256_hex(canonicalize(list(command)))
        facts = ReceiptFacts(
            change=self.plan.change.id,
            provider=name,
            adapter=provider.adapter,
            fingerprint=self.fingerprints.get(provider.name) or self.fingerprint(provider),
            subjects=subjects,
            sandbox=self.options.sandbox,
            issuer=self.options.issuer,  # who signs this receipt; an accepted one is in details
            started=started,
            finished=finished,
            configuration=configuration,
            log_sha256=log_sha256,
            log_tail=self.masker.text(log_tail or ""),
            url=outcome.url or self.options.url,
            wiring=self.wiring(provider),
        )
        statement = self.masker.json(build_statement(facts, outcome))
        sealed = seal(statement, self.key)
        return self.store(
            provider,
            name=name,
            capability=outcome.capability,
            receipt_id=sealed.id,
            envelope=sealed.envelope,
            outcome=outcome,
        )

    def _with_symlink_findings(self, outcome: Outcome, repos: Sequence[str]) -> Outcome:
        found = [
            Finding(
                kind="external-symlink",
                message=self.masker.text(
                    f"{repo}: {link} resolves outside the repository ({target}); what it points"
                    " at is not part of the content identity, so this result is never reused"
                    " from the cache"
                ),
                severity="warning",
                file=link,
            )
            for repo in repos
            if repo in self.plan.repositories
            for link, target in sorted(self.external_symlinks(repo).items())
        ]
        if not found:
            return outcome
        if len(found) > MAX_SYMLINK_FINDINGS:
            more = len(found) - MAX_SYMLINK_FINDINGS
            found = [
                *found[:MAX_SYMLINK_FINDINGS],
                Finding(
                    kind="external-symlink",
                    message=f"… and {more} more link(s) resolving outside their repository",
                    severity="warning",
                ),
            ]
        return replace(outcome, findings=(*outcome.findings, *found))

    def store(
        self,
        provider: Provider,
        *,
        name: str,
        capability: str,
        receipt_id: str,
        envelope: bytes,
        outcome: Outcome,
        cached: bool = False,
    ) -> ReceiptEntry:
        filename = f"{name}.{capability}.json"
        run_path = self.run_dir / provider.name / filename
        run_path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(run_path, envelope, durable=not cached)
        latest = self.state.latest(self.plan.change.id) / filename
        if not (cached and _same_bytes(latest, envelope)):
            write_atomic(latest, envelope, durable=not cached)
        adapter = registry.ADAPTERS[provider.adapter]
        view = ReceiptView(
            provider=name,
            capability=capability,
            status=outcome.status,
            repositories=adapter.repositories(provider, self.plan),
            reason=outcome.reason,
            claims=dict(outcome.claims),
            input_mode=outcome.input_mode,
            citations=dict(outcome.citations),
        )
        entry = ReceiptEntry(
            capability=capability,
            provider=name,
            status=outcome.status,
            reason=outcome.reason,
            id=receipt_id,
            path=str(run_path.relative_to(self.plan.root)),
            view=view,
            tests=outcome.tests.to_json() if outcome.tests is not None else None,
        )
        self.reports[provider.name].receipts.append(entry)
        return entry

    def reuse(self, provider: Provider, fp: str) -> bool:
        """Reuse a cached pass: the original receipts, byte for byte.

        Only what this run's key signed is reused (a cache entry edited on disk,
        or signed with another key, runs the provider again).
        """
        envelopes = cache.load(self.state.cache, fp)
        if not envelopes:
            return False
        parsed = []
        for envelope in envelopes:
            try:
                payload, _key = verify_signatures(parse_envelope(envelope), [self.public_key])
                ext = json.loads(payload)["predicate"]["changeloop"]
            except (ChangeloopError, ValueError, KeyError, TypeError):
                return False
            if ext.get("status") != "pass" or ext.get("fingerprint") != fp:
                return False
            parsed.append((envelope, payload, ext))
        for envelope, payload, ext in parsed:
            outcome = Outcome(
                capability=ext["capability"],
                status="pass",
                reason=None,
                provider=ext["provider"],
                claims=ext.get("claims") or {},
                input_mode=ext.get("inputMode"),
                tests=_counts(ext.get("tests")),
            )
            receipt_id = "sha256:" + hashlib.sha256(payload).hexdigest()
            self.store(
                provider,
                name=ext["provider"],
                capability=ext["capability"],
                receipt_id=receipt_id,
                envelope=envelope,
                outcome=outcome,
                cached=True,
            )
        return True

    def seal_skipped(self, provider: Provider, reason: str) -> None:
        now = datetime.now(UTC)
        reason = self.masker.text(reason)
        outcomes = every_capability(provider, "inconclusive", f"not run: {reason}")
        report = self.reports[provider.name]
        report.reason = reason
        for outcome in outcomes:
            self.seal_outcome(
                provider, outcome, started=now, finished=now, log_sha256=None, log_tail=None
            )
        report.state = "not-run"


def _credit_listed_claims(provider: Provider, outcome: Outcome) -> Outcome:
    """A provider's own ``claims`` are credited by its pass, failed by its fail."""
    if not provider.claims:
        return outcome
    mark: ClaimMark = {"pass": "credited", "fail": "failed"}.get(  # type: ignore[assignment]
        outcome.status, "uncredited"
    )
    claims = dict(outcome.claims)
    for cid in provider.claims:
        claims.setdefault(cid, mark)
    return replace(outcome, claims=claims)


def _hmac_key(key: Any) -> bytes:
    from cryptography.hazmat.primitives import serialization

    raw = key.private_bytes(
        serialization.Encoding.Raw,
        serialization.PrivateFormat.Raw,
        serialization.NoEncryption(),
    )
    return hashlib.sha256(b"changeloop fingerprint hmac\0" + raw).digest()


def _claims_wiring(plan: Plan) -> dict[str, Any]:
    return {
        cid: {"requires": list(c.requires), "repository": c.repository, "inputMode": c.input_mode}
        for cid, c in sorted(plan.evidence.claims.items())
    }


def every_capability(
    provider: Provider, status: Status, reason: str, findings: tuple[Finding, ...] = ()
) -> list[Outcome]:
    """The same verdict for every receipt the provider would have issued."""
    adapter = registry.ADAPTERS[provider.adapter]
    return [
        Outcome(capability=c, status=status, reason=reason, findings=findings)
        for c in adapter.capabilities(provider)
    ]


def _same_bytes(path: Path, data: bytes) -> bool:
    try:
        return path.stat().st_size == len(data) and path.read_bytes() == data
    except OSError:
        return False


def _counts(value: Any) -> TestCounts | None:
    """A cached receipt's ``tests`` back as counts (None when absent or malformed)."""
    keys = ("discovered", "passed", "failed", "skipped")
    if not isinstance(value, dict) or not all(type(value.get(k)) is int for k in keys):
        return None
    return TestCounts(**{k: value[k] for k in keys})

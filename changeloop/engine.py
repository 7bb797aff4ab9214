"""One ``prove`` run: sandboxes, scheduling, services, adapters, receipts.

The engine owns nothing clever itself; it composes the modules that do:
content identity and sandboxes (``sandboxes/``), fingerprints and the cache,
the resource-aware scheduler, services, the adapters, and receipt sealing.

Order of a provider's life: its dependencies finish → its fingerprint is
computed (upstream fingerprints included) → a cached pass is reused byte for
byte, or → its repository's sandbox and ``setup`` are made ready once → its
services are leased → the adapter runs → each outcome is sealed into a receipt
and written atomically. A provider that never finished (Ctrl-C) leaves no
receipt.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any, Literal

import anyio

from changeloop import cache, fingerprint, sandboxes
from changeloop.errors import ChangeloopError, Problem
from changeloop.identity import content_identity
from changeloop.jcs import canonicalize
from changeloop.keys import load_private_key, workspace_key
from changeloop.model import ClaimMark, ContentIdentity, Plan, Provider, SandboxMode
from changeloop.processes import run_process
from changeloop.providers import registry
from changeloop.providers.base import Outcome, RunContext
from changeloop.receipts import (
    ReceiptFacts,
    build_statement,
    configuration_digests,
    seal,
    sha256_hex,
    write_atomic,
)
from changeloop.scheduler import Job, JobEvent, JobResult, schedule
from changeloop.services import ServiceManager
from changeloop.services.ports import port_holder
from changeloop.state import StateDir, ensure_gitignored
from changeloop.verdict import ReceiptView, Verdict, decide

SCHEMA_VERSION = "changeloop/receipt@1"
ProviderState = Literal["ran", "cached", "not-run"]


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


@dataclass
class ProviderReport:
    name: str
    adapter: str
    repository: str | None
    state: ProviderState = "not-run"
    duration_ms: int = 0
    reason: str | None = None
    receipts: list[ReceiptEntry] = field(default_factory=list)


@dataclass
class ProveResult:
    plan: Plan
    run_id: str
    run_dir: Path
    providers: dict[str, ProviderReport]
    verdict: Verdict
    interrupted: bool = False


EventSink = Callable[[str, str, str | None], None]  # (provider, kind, detail)


class _Run:
    """State shared by the jobs of one run."""

    def __init__(self, plan: Plan, options: ProveOptions, on_event: EventSink | None) -> None:
        self.plan = plan
        self.options = options
        self.on_event = on_event or (lambda _p, _k, _d: None)
        self.state = StateDir(plan.root)
        ensure_gitignored(plan.root)
        sandboxes.cleanup_stale(self.state.sandboxes)
        self.run_id, self.run_dir = self.state.new_run_dir()
        self.key = (
            load_private_key(options.sign_key) if options.sign_key else workspace_key(plan.root)
        )
        self.hmac_key = _hmac_key(self.key)
        self.config_digests = configuration_digests(plan, None)
        self.identities: dict[str, ContentIdentity] = {}
        self.workdirs: dict[str, Path] = {}
        self.boxes: dict[str, sandboxes.Sandbox] = {}
        self.box_locks: dict[str, anyio.Lock] = {}
        self.setup_ok: dict[str, bool] = {}
        self.fingerprints: dict[str, str] = {}
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
    def fingerprint(self, provider: Provider) -> str:
        adapter = registry.ADAPTERS[provider.adapter]
        repos = adapter.repositories(provider, self.plan)
        trees = {repo: self.identity(repo).tree for repo in repos}
        inputs_digest = None
        if provider.inputs and provider.repository:
            source = self.plan.repositories[provider.repository].path
            inputs_digest = fingerprint.inputs_digest(source, provider.inputs)
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
        )
        self.fingerprints[provider.name] = fp
        return fp

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
        adapter = registry.ADAPTERS[provider.adapter]
        repos = adapter.repositories(provider, self.plan)
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
            log_tail=log_tail or "",
            url=outcome.url or self.options.url,
        )
        statement = build_statement(facts, outcome)
        sealed = seal(statement, self.key)
        return self.store(
            provider,
            name=name,
            capability=outcome.capability,
            receipt_id=sealed.id,
            envelope=sealed.envelope,
            outcome=outcome,
        )

    def store(
        self,
        provider: Provider,
        *,
        name: str,
        capability: str,
        receipt_id: str,
        envelope: bytes,
        outcome: Outcome,
    ) -> ReceiptEntry:
        filename = f"{name}.{capability}.json"
        run_path = self.run_dir / provider.name / filename
        run_path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(run_path, envelope)
        latest = self.state.latest(self.plan.change.id) / filename
        latest.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(latest, envelope)
        adapter = registry.ADAPTERS[provider.adapter]
        view = ReceiptView(
            provider=name,
            capability=capability,
            status=outcome.status,
            repositories=adapter.repositories(provider, self.plan),
            reason=outcome.reason,
            claims=dict(outcome.claims),
            input_mode=outcome.input_mode,
        )
        entry = ReceiptEntry(
            capability=capability,
            provider=name,
            status=outcome.status,
            reason=outcome.reason,
            id=receipt_id,
            path=str(run_path.relative_to(self.plan.root)),
            view=view,
        )
        self.reports[provider.name].receipts.append(entry)
        return entry


async def prove(
    plan: Plan, options: ProveOptions, on_event: EventSink | None = None
) -> ProveResult:
    """Run every provider of ``plan`` and decide the change."""
    run = _Run(plan, options, on_event)
    interrupted = False
    users: dict[str, int] = {}
    for provider in plan.providers.values():
        for service in provider.services:
            users[service] = users.get(service, 0) + 1
    estimates = run.state.load_durations(plan.change.id)
    jobs = [
        Job(
            name=p.name,
            depends_on=p.depends_on,
            resources=p.resources,
            estimate_s=estimates.get(p.name),
        )
        for p in plan.providers.values()
    ]
    results: dict[str, JobResult] = {}
    try:
        async with ServiceManager(
            plan,
            workdirs=_LazyWorkdirs(run),
            env=dict(os.environ),
            secrets=_secrets(plan),
            log_dir=run.run_dir / "services",
            users=users,
        ) as services:

            async def run_job(job: Job) -> bool:
                provider = plan.providers[job.name]
                return await _run_provider(run, provider, services)

            def forward(event: JobEvent) -> None:
                run.on_event(event.job, event.kind, event.detail)
                if event.kind == "skipped":
                    services.release_unused(plan.providers[event.job].services)

            results = await schedule(
                jobs,
                run_job,
                slots=max(1, options.jobs),
                fail_fast=options.fail_fast,
                on_event=forward,
            )
    except anyio.get_cancelled_exc_class():
        interrupted = True
        raise
    finally:
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(run.remove_sandboxes)
        if not interrupted:
            run.state.save_durations(plan.change.id, run.durations)
    for name, result in results.items():
        if result.state == "skipped":
            _seal_skipped(run, plan.providers[name], result.reason or "not run")
    views = [e.view for report in run.reports.values() for e in report.receipts]
    verdict = decide(plan, views, run.notes)
    return ProveResult(plan, run.run_id, run.run_dir, run.reports, verdict)


class _LazyWorkdirs(Mapping[str, Path]):
    """Services start in their repository's sandbox, which exists by then."""

    def __init__(self, run: _Run) -> None:
        self._run = run

    def __getitem__(self, repo: str) -> Path:
        return self._run.workdirs.get(repo) or self._run.plan.repositories[repo].path

    def __iter__(self) -> Any:
        return iter(self._run.plan.repositories)

    def __len__(self) -> int:
        return len(self._run.plan.repositories)


async def _run_provider(run: _Run, provider: Provider, services: ServiceManager) -> bool:
    report = run.reports[provider.name]
    adapter = registry.ADAPTERS[provider.adapter]
    fp = run.fingerprint(provider)
    if run.options.use_cache and not _ports_taken(run.plan, provider) and _reuse(run, provider, fp):
        services.release_unused(provider.services)
        report.state = "cached"
        run.on_event(provider.name, "cached", None)
        return True
    started = datetime.now(UTC)
    clock = anyio.current_time()
    repos = adapter.repositories(provider, run.plan)
    workdirs: dict[str, Path] = {}
    if adapter.RUNS_COMMAND:
        for repo in repos:
            workdirs[repo] = await run.workdir(repo)
            if not await _setup(run, repo):
                reason = f"setup of repository {repo} failed; see the setup receipt"
                outcomes = [
                    Outcome(capability=c, status="inconclusive", reason=reason)
                    for c in adapter.capabilities(provider)
                ]
                services.release_unused(provider.services)
                return _finish(run, provider, outcomes, started=started, clock=clock, log=None)
    else:
        workdirs = {repo: run.plan.repositories[repo].path for repo in repos}
    env, secrets_, missing = _environment(provider)
    if missing:
        reason = f"environment variable {missing} named in envFrom is not set"
        outcomes = [
            Outcome(capability=c, status="fail", reason=reason)
            for c in adapter.capabilities(provider)
        ]
        services.release_unused(provider.services)
        return _finish(run, provider, outcomes, started=started, clock=clock, log=None)
    provider_dir = run.run_dir / provider.name
    provider_dir.mkdir(parents=True, exist_ok=True)
    logs: list[tuple[str, str]] = []

    async def run_command(
        argv: Any, *, cwd: Path, env: Mapping[str, str], timeout_ms: int, log_name: str
    ) -> Any:
        result = await run_process(
            list(argv),
            cwd=cwd,
            env=env,
            timeout_ms=timeout_ms,
            log_dir=provider_dir,
            log_name=log_name,
            secrets=secrets_,
        )
        logs.append((result.log_sha256, result.log_tail))
        return result

    ctx = RunContext(
        plan=run.plan,
        provider=provider,
        workdirs=workdirs,
        sources={r: repo.path for r, repo in run.plan.repositories.items()},
        identities={repo: run.identity(repo) for repo in repos},
        run_dir=provider_dir,
        env=env,
        secrets=secrets_,
        now=started,
        run_command=run_command,
    )
    async with services.lease(provider.services) as problems:
        if problems:
            reason = "; ".join(f.message for f in problems)
            outcomes = [
                Outcome(capability=c, status="fail", reason=reason, findings=tuple(problems))
                for c in adapter.capabilities(provider)
            ]
        else:
            outcomes = await _call_adapter(adapter.run, ctx, provider)
    if not outcomes:
        # Only an adapter that reads evidence made elsewhere (external) may issue
        # no receipt at all; its claims then stay unproven, with its reason.
        explain = getattr(adapter, "missing_reason", None)
        why = explain(ctx) if explain is not None else None
        run.notes[provider.capability] = (
            f"{provider.capability}: {why or f'provider {provider.name} issued no receipt'}"
        )
    log = logs[-1] if logs else (None, None)
    return _finish(run, provider, outcomes, started=started, clock=clock, log=log)


async def _call_adapter(
    run_adapter: Callable[[RunContext], Any], ctx: RunContext, provider: Provider
) -> list[Outcome]:
    try:
        outcomes: list[Outcome] = await run_adapter(ctx)
        return outcomes
    except ChangeloopError as exc:
        reason = "; ".join(p.message for p in exc.problems)
    except (OSError, ValueError, KeyError, TypeError, RuntimeError) as exc:
        reason = f"adapter {provider.adapter} crashed: {type(exc).__name__}: {exc}"
    adapter = registry.ADAPTERS[provider.adapter]
    return [
        Outcome(capability=c, status="inconclusive", reason=reason)
        for c in adapter.capabilities(provider)
    ]


def _finish(
    run: _Run,
    provider: Provider,
    outcomes: list[Outcome],
    *,
    started: datetime,
    clock: float,
    log: tuple[str | None, str | None] | None,
) -> bool:
    finished = datetime.now(UTC)
    report = run.reports[provider.name]
    report.state = "ran"
    report.duration_ms = int((anyio.current_time() - clock) * 1000)
    run.durations[provider.name] = report.duration_ms / 1000
    log_sha, log_tail = log or (None, None)
    outcomes = [_credit_listed_claims(provider, o) for o in outcomes]
    entries = [
        run.seal_outcome(
            provider, o, started=started, finished=finished, log_sha256=log_sha, log_tail=log_tail
        )
        for o in outcomes
    ]
    ok = all(o.status == "pass" for o in outcomes)
    if not ok:
        report.reason = next((o.reason for o in outcomes if o.status != "pass" and o.reason), None)
    if ok and entries:
        envelopes = [
            (run.run_dir / provider.name / Path(e.path).name).read_bytes() for e in entries
        ]
        cache.store(run.state.cache, run.fingerprints[provider.name], envelopes)
    return ok


def _ports_taken(plan: Plan, provider: Provider) -> bool:
    """A leftover server on a service's port is reported even when a cached pass exists."""
    for name in provider.services:
        service = plan.services.get(name)
        port = service.readiness.port if service and service.readiness else None
        if port is not None and port_holder(port) is not None:
            return True
    return False


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


def _reuse(run: _Run, provider: Provider, fp: str) -> bool:
    """Reuse a cached pass: the original receipts, byte for byte."""
    envelopes = cache.load(run.state.cache, fp)
    if not envelopes:
        return False
    parsed = []
    for envelope in envelopes:
        try:
            doc = json.loads(envelope)
            import base64

            payload = base64.b64decode(doc["payload"])
            statement = json.loads(payload)
            ext = statement["predicate"]["changeloop"]
        except (ValueError, KeyError, TypeError):
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
        )
        receipt_id = "sha256:" + hashlib.sha256(payload).hexdigest()
        run.store(
            provider,
            name=ext["provider"],
            capability=ext["capability"],
            receipt_id=receipt_id,
            envelope=envelope,
            outcome=outcome,
        )
    return True


async def _setup(run: _Run, repo: str) -> bool:
    """Run the repository's setup commands once per sandbox, before its providers."""
    lock = run.box_locks.setdefault(f"setup:{repo}", anyio.Lock())
    async with lock:
        if repo in run.setup_ok:
            return run.setup_ok[repo]
        repository = run.plan.repositories[repo]
        ok = True
        for index, argv in enumerate(repository.setup):
            log_dir = run.run_dir / f"setup-{repo}"
            log_dir.mkdir(parents=True, exist_ok=True)
            started = datetime.now(UTC)
            result = await run_process(
                list(argv),
                cwd=run.workdirs[repo],
                env=dict(os.environ),
                timeout_ms=30 * 60 * 1000,
                log_dir=log_dir,
                log_name=f"setup-{index}",
            )
            if result.exit_code == 0:
                continue
            ok = False
            why = result.spawn_error or f"exited {result.exit_code}"
            pseudo = Provider(
                name=f"setup-{repo}",
                adapter="command",
                capability="setup",
                repository=repo,
                command=tuple(argv),
            )
            outcome = Outcome(
                capability="setup",
                status="fail",
                reason=f"setup {' '.join(argv)}: {why}",
                exit_code=result.exit_code,
                command=tuple(argv),
            )
            run.reports.setdefault(pseudo.name, ProviderReport(pseudo.name, "command", repo))
            run.seal_outcome(
                pseudo,
                outcome,
                started=started,
                finished=datetime.now(UTC),
                log_sha256=result.log_sha256,
                log_tail=result.log_tail,
            )
            run.reports[pseudo.name].state = "ran"
            break
        run.setup_ok[repo] = ok
        return ok


def _seal_skipped(run: _Run, provider: Provider, reason: str) -> None:
    adapter = registry.ADAPTERS[provider.adapter]
    now = datetime.now(UTC)
    outcomes = [
        Outcome(capability=c, status="inconclusive", reason=f"not run: {reason}")
        for c in adapter.capabilities(provider)
    ]
    report = run.reports[provider.name]
    report.reason = reason
    for outcome in outcomes:
        run.seal_outcome(
            provider, outcome, started=now, finished=now, log_sha256=None, log_tail=None
        )
    report.state = "not-run"


def _environment(provider: Provider) -> tuple[dict[str, str], tuple[str, ...], str | None]:
    env = dict(os.environ)
    env.update(provider.env)
    secrets_: list[str] = []
    for name in provider.env_from:
        if name not in os.environ:
            return env, (), name
        env[name] = os.environ[name]
        if os.environ[name]:
            secrets_.append(os.environ[name])
    return env, tuple(secrets_), None


def _secrets(plan: Plan) -> tuple[str, ...]:
    names = {n for p in plan.providers.values() for n in p.env_from}
    names |= {n for s in plan.services.values() for n in s.env_from}
    return tuple(sorted(os.environ[n] for n in names if os.environ.get(n)))


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


def nothing_to_prove(plan: Plan) -> Problem | None:
    if plan.evidence.claims or plan.evidence.requires:
        return None
    return Problem(
        code="nothing_to_prove",
        message=f"change {plan.change.id} declares no claims and no requires: nothing to prove",
        fix="add `claims:` or `requires:` to evidence.yaml",
    )

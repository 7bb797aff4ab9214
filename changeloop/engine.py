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

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio

from changeloop import cache
from changeloop.errors import ChangeloopError, Problem
from changeloop.masking import Masker
from changeloop.model import Plan, Provider
from changeloop.processes import run_process
from changeloop.providers import registry
from changeloop.providers.base import Outcome, RunContext
from changeloop.run_state import (
    EventSink,
    ProveOptions,
    ProviderReport,
    ReceiptEntry,
    RunState,
    every_capability,
)
from changeloop.runlog import RunLog
from changeloop.scheduler import Job, JobEvent, JobResult, schedule
from changeloop.services import ServiceManager
from changeloop.services.ports import port_holder
from changeloop.verdict import Verdict, decide

__all__ = [
    "ProveOptions",
    "ProveResult",
    "ProviderReport",
    "ReceiptEntry",
    "nothing_to_prove",
    "prove",
]


@dataclass
class ProveResult:
    plan: Plan
    run_id: str
    run_dir: Path
    providers: dict[str, ProviderReport]
    verdict: Verdict
    interrupted: bool = False
    masker: Masker = field(default_factory=lambda: Masker(()))


async def prove(
    plan: Plan, options: ProveOptions, on_event: EventSink | None = None
) -> ProveResult:
    """Run every provider of ``plan`` and decide the change."""
    run = RunState(plan, options, on_event)
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
    runlog = RunLog(
        run_id=run.run_id,
        change=plan.change.id,
        slots=options.jobs,
        sandbox=options.sandbox,
        providers=[
            (p.name, p.adapter, p.repository, p.depends_on) for p in plan.providers.values()
        ],
    )
    # Every receipt, even a skipped provider's, names its content identity: a
    # repository git cannot identify refuses the run before anything starts.
    await anyio.to_thread.run_sync(_identify_all, run)
    try:
        async with ServiceManager(
            plan,
            workdirs=_LazyWorkdirs(run),
            env=dict(os.environ),
            secrets=run.masker.secrets,
            log_dir=run.run_dir / "services",
            users=users,
        ) as services:

            async def run_job(job: Job) -> bool:
                provider = plan.providers[job.name]
                return await _run_provider(run, provider, services)

            def forward(event: JobEvent) -> None:
                runlog.event(event)
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
            run.seal_skipped(plan.providers[name], result.reason or "not run")
        elif result.state == "failed" and result.reason and not run.reports[name].receipts:
            # run_job raised (e.g. its sandbox could not be made): no receipt, but say why.
            _explain_missing(run, plan.providers[name], result.reason)
    _record_run(run, runlog)
    views = [e.view for report in run.reports.values() for e in report.receipts]
    notes = {cap: run.masker.text(note) for cap, note in run.notes.items()}
    verdict = decide(plan, views, notes)
    return ProveResult(plan, run.run_id, run.run_dir, run.reports, verdict, masker=run.masker)


def _record_run(run: RunState, runlog: RunLog) -> None:
    """Write ``runs/<id>/run.json`` (slots, start/end, states) for the report's timeline."""
    runlog.settle(
        {
            name: (
                r.state,
                r.duration_ms,
                run.masker.optional(r.reason),
                [e.path for e in r.receipts],
            )
            for name, r in run.reports.items()
        }
    )
    runlog.write(run.run_dir)


def _identify_all(run: RunState) -> None:
    for provider in run.plan.providers.values():
        for repo in registry.ADAPTERS[provider.adapter].repositories(provider, run.plan):
            run.identity(repo)


def _explain_missing(run: RunState, provider: Provider, reason: str) -> None:
    report = run.reports[provider.name]
    reason = run.masker.text(reason)
    report.reason = reason
    for capability in registry.ADAPTERS[provider.adapter].capabilities(provider):
        why = f"{capability}: provider {provider.name} could not run: {reason}"
        run.notes.setdefault(capability, why)


class _LazyWorkdirs(Mapping[str, Path]):
    """Services start in their repository's sandbox, which exists by then."""

    def __init__(self, run: RunState) -> None:
        self._run = run

    def __getitem__(self, repo: str) -> Path:
        return self._run.workdirs.get(repo) or self._run.plan.repositories[repo].path

    def __iter__(self) -> Any:
        return iter(self._run.plan.repositories)

    def __len__(self) -> int:
        return len(self._run.plan.repositories)


async def _run_provider(run: RunState, provider: Provider, services: ServiceManager) -> bool:
    report = run.reports[provider.name]
    adapter = registry.ADAPTERS[provider.adapter]
    fp = run.fingerprint(provider)
    if (
        run.options.use_cache
        and not run.identity_open(provider)
        and not _ports_taken(run.plan, provider, services)
        and run.reuse(provider, fp)
    ):
        services.release_unused(provider.services)
        report.state = "cached"
        run.on_event(provider.name, "cached", None)
        return True
    started = datetime.now(UTC)
    clock = anyio.current_time()
    repos = adapter.repositories(provider, run.plan)
    workdirs: dict[str, Path] = {}
    # Its services start in their repositories' sandboxes, which must exist (and be
    # set up) first; otherwise a service would run in the user's own checkout.
    ready = [*(repos if adapter.RUNS_COMMAND else ()), *_service_repositories(run.plan, provider)]
    for repo in dict.fromkeys(ready):
        workdir = await run.workdir(repo)
        if adapter.RUNS_COMMAND and repo in repos:
            workdirs[repo] = workdir
        if not await _setup(run, repo):
            reason = f"setup of repository {repo} failed; see the setup receipt"
            services.release_unused(provider.services)
            outcomes = every_capability(provider, "inconclusive", reason)
            return _finish(run, provider, outcomes, started=started, clock=clock, log=None)
    if not adapter.RUNS_COMMAND:
        workdirs = {repo: run.plan.repositories[repo].path for repo in repos}
    env, missing = _environment(provider)
    # Every process inherits the environment, so every envFrom value of the plan is
    # masked in every log, not only the values this provider named: the run's masker.
    secrets_ = run.masker.secrets
    if missing:
        reason = f"environment variable {missing} named in envFrom is not set"
        services.release_unused(provider.services)
        outcomes = every_capability(provider, "fail", reason)
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
        # external judges receipts of the providers it accepts, which may live in any
        # repository of the change: it sees every repository's content identity.
        identities={
            repo: run.identity(repo)
            for repo in (repos if adapter.RUNS_COMMAND else (*repos, *run.plan.repositories))
        },
        run_dir=provider_dir,
        env=env,
        secrets=secrets_,
        now=started,
        run_command=run_command,
    )
    async with services.lease(provider.services) as problems:
        if problems:
            reason = "; ".join(f.message for f in problems)
            outcomes = every_capability(provider, "fail", reason, tuple(problems))
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
    return every_capability(provider, "inconclusive", reason)


def _finish(
    run: RunState,
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
    outcomes = [run.masker.outcome(o) for o in outcomes]
    entries = [
        run.seal_outcome(
            provider, o, started=started, finished=finished, log_sha256=log_sha, log_tail=log_tail
        )
        for o in outcomes
    ]
    ok = all(o.status == "pass" for o in outcomes)
    if not ok:
        report.reason = next((o.reason for o in outcomes if o.status != "pass" and o.reason), None)
    if ok and entries and not run.identity_open(provider):
        envelopes = [
            (run.run_dir / provider.name / Path(e.path).name).read_bytes() for e in entries
        ]
        cache.store(run.state.cache, run.fingerprints[provider.name], envelopes)
    return ok


def _service_repositories(plan: Plan, provider: Provider) -> list[str]:
    names = (plan.services[s].repository for s in provider.services if s in plan.services)
    return [repo for repo in names if repo is not None and repo in plan.repositories]


def _ports_taken(plan: Plan, provider: Provider, services: ServiceManager) -> bool:
    """A leftover server on a service's port is reported even when a cached pass exists.

    A port held by a service this run started is ours, not a leftover.
    """
    for name in provider.services:
        if services.started(name):
            continue
        service = plan.services.get(name)
        port = service.readiness.port if service and service.readiness else None
        if port is not None and port_holder(port) is not None:
            return True
    return False


async def _setup(run: RunState, repo: str) -> bool:
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
                secrets=run.masker.secrets,
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


def _environment(provider: Provider) -> tuple[dict[str, str], str | None]:
    """The provider's environment, or the first envFrom variable that is not set."""
    env = dict(os.environ)
    env.update(provider.env)
    for name in provider.env_from:
        if name not in os.environ:
            return env, name
        env[name] = os.environ[name]
    return env, None


def nothing_to_prove(plan: Plan) -> Problem | None:
    if plan.evidence.claims or plan.evidence.requires:
        return None
    return Problem(
        code="nothing_to_prove",
        message=f"change {plan.change.id} declares no claims and no requires: nothing to prove",
        fix="add `claims:` or `requires:` to evidence.yaml",
    )

"""One ``prove`` run, composed from the stages of ``changeloop.run`` (DESIGN.md §9).

The engine owns no state others write into; it wires the stages together:
``Sandboxes`` (identity, sandbox, setup), the ``Fingerprinter``, the
scheduler, services, an ``Executor`` the adapters hand their jobs to, and the
``ReceiptSink`` that writes every receipt. Events go to the views as typed
``RunEvent`` records.

Order of a provider's life: its dependencies finish → its fingerprint is
computed (upstream fingerprints included) → a cached pass is reused byte for
byte, or → its repository's sandbox and ``setup`` are made ready once → its
services are leased → the adapter runs (its command through the executor) →
each outcome is sealed into a receipt and written atomically. A provider that
never finished (Ctrl-C) leaves no receipt.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

import anyio

from changeloop import shared_cache
from changeloop.cache import NEVER_CACHED, entry_path
from changeloop.errors import ChangeloopError, Problem
from changeloop.executors import open_executor
from changeloop.keys import load_private_key, workspace_key
from changeloop.masking import Masker
from changeloop.model import Plan, Provider
from changeloop.nochange import Observed
from changeloop.providers import registry
from changeloop.providers.base import Finding, Outcome, RunContext
from changeloop.run.carried import KnownInputs
from changeloop.run.fingerprinter import Fingerprinter, hmac_key
from changeloop.run.job import Executor, Job, JobResult
from changeloop.run.records import (
    EventSink,
    ProveOptions,
    ProviderReport,
    ReceiptEntry,
    RunEvent,
)
from changeloop.run.sandboxes import Sandboxes
from changeloop.run.setup import run_setup
from changeloop.run.sink import ReceiptSink, Timing, every_capability
from changeloop.runlog import RunLog
from changeloop.scheduler import Task, TaskEvent, TaskResult, schedule
from changeloop.services import ServiceManager
from changeloop.services.ports import port_holder
from changeloop.spawn import environ
from changeloop.state import StateDir, ensure_gitignored
from changeloop.verdict import Verdict, decide

__all__ = [
    "ProveOptions",
    "ProveResult",
    "ProviderReport",
    "ReceiptEntry",
    "RunEvent",
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
    notes: list[str] = field(default_factory=list)  # what --cache-from / --publish had to say
    observed: Observed | None = None  # what the run read beyond the plan (changeloop.nochange)


@dataclass
class _Run:
    """The stages of one run, as composed by :func:`prove` (none writes another's state)."""

    plan: Plan
    options: ProveOptions
    run_id: str
    run_dir: Path
    state: StateDir
    boxes: Sandboxes
    fingerprinter: Fingerprinter
    sink: ReceiptSink
    executor: Executor
    emit: EventSink
    runlog: RunLog  # runs/<id>/run.json: slots and times, from the scheduler's events
    key: Any  # the key that signs this run's receipts
    fingerprints: dict[str, str] = field(default_factory=dict)  # written by fingerprint() only
    shared: shared_cache.SharedCache | None = None  # --cache-from DIR

    def fingerprint(self, provider: Provider) -> str:
        if provider.name not in self.fingerprints:
            fp = self.fingerprinter.fingerprint(provider, self.fingerprints)
            self.fingerprints[provider.name] = fp
        return self.fingerprints[provider.name]


async def prove(
    plan: Plan,
    options: ProveOptions,
    on_event: EventSink | None = None,
    *,
    known: Mapping[str, KnownInputs] | None = None,
) -> ProveResult:
    """Run every provider of ``plan`` and decide the change.

    ``known``: inputs digests a verified no-change record holds (``run.carried``).
    """
    state = StateDir(plan.root)
    ensure_gitignored(plan.root)
    async with open_executor(plan, options, state.sandboxes) as executor:
        boxes = Sandboxes(
            plan,
            options.sandbox,
            state.sandboxes,
            keep=options.keep_sandbox,
            trees=options.trees,
        )
        async with boxes:
            run = _compose(plan, options, state, boxes, on_event, executor=executor, known=known)
            try:
                results = await _schedule(run)
            except BaseException:
                await run.sink.drain()  # what finished before a cancel is on disk (§13)
                raise
    for name, result in results.items():
        provider = plan.providers[name]
        if result.state == "skipped":
            run.sink.skipped(provider, result.reason or "not run")
        elif result.state == "failed" and result.reason and not run.sink.reports[name].receipts:
            run.sink.could_not_run(provider, result.reason)  # its job raised: no receipt
    await run.sink.drain()  # the receipts are written in group commits (run/commit.py)
    _record_run(run)
    notes = list(run.shared.notes) if run.shared else []
    if options.publish is not None:
        written = shared_cache.publish(
            options.publish, plan.root, plan, run.sink.reports, run.fingerprints
        )
        notes.append(f"published {len(written)} signed receipt(s) to {options.publish}")
    verdict = decide(plan, run.sink.views(), run.sink.notes())
    return ProveResult(
        plan,
        run.run_id,
        run.run_dir,
        run.sink.reports,
        verdict,
        masker=run.sink.masker,
        notes=notes,
        observed=_observed(run),
    )


def _observed(run: _Run) -> Observed:
    """What the no-change record keys this run's answer on (changeloop.nochange)."""
    trees = {repo: ident.tree for repo, ident in run.boxes.identities().items()}
    return Observed(
        trees=trees,
        environments=dict(run.fingerprinter.environments),
        fingerprints=dict(run.fingerprints),
        symlinks={repo: run.fingerprinter.symlinks(repo) for repo in trees},
        inputs={repo: dict(d) for repo, d in run.fingerprinter.inputs.items()},
        gitlinks={repo: run.fingerprinter.gitlinks(repo) for repo in run.fingerprinter.inputs},
        key=None if run.options.sign_key else run.key,
        state=run.state.path,
    )


def _compose(
    plan: Plan,
    options: ProveOptions,
    state: StateDir,
    boxes: Sandboxes,
    on_event: EventSink | None,
    *,
    executor: Executor,
    known: Mapping[str, KnownInputs] | None = None,
) -> _Run:
    run_id, run_dir = state.new_run_dir()
    key = load_private_key(options.sign_key) if options.sign_key else workspace_key(plan.root)
    # One masker for the run: every string written passes through it (DESIGN §2.6).
    masker = Masker.from_plan(plan)
    fingerprinter = Fingerprinter(
        plan,
        boxes.identity,
        sandbox=options.sandbox,
        issuer=options.issuer,
        hmac_key=hmac_key(key),
        state_path=state.path,
        known=known,
    )
    view = on_event or (lambda _e: None)

    def emit(event: RunEvent) -> None:
        view(RunEvent(event.provider, event.kind, masker.optional(event.detail)))

    fingerprints: dict[str, str] = {}
    sink = ReceiptSink(
        plan,
        state=state,
        run_dir=run_dir,
        key=key,
        masker=masker,
        sandbox=options.sandbox,
        issuer=options.issuer,
        url=options.url,
        identity=boxes.identity,
        fingerprint=lambda p: run.fingerprint(p),  # noqa: PLW0108 (run is bound below)
        wiring=fingerprinter.wiring,
        external_symlinks=fingerprinter.external_symlinks,
    )
    run = _Run(
        plan,
        options,
        run_id,
        run_dir,
        state,
        boxes,
        fingerprinter,
        sink,
        executor,
        emit,
        _runlog(plan, options, run_id, _slots(executor, options)),
        key,
        fingerprints,
    )
    if options.cache_from is not None:
        run.shared = _shared_cache(run, options.cache_from, boxes, key, state)
    return run


def _shared_cache(
    run: _Run, directory: Path, boxes: Sandboxes, key: Any, state: StateDir
) -> shared_cache.SharedCache:
    """``--cache-from``: receipts another machine signed, trusted by the change's ``ci`` keys."""
    make = partial(
        Fingerprinter, run.plan, boxes.identity, hmac_key=hmac_key(key), state_path=state.path
    )
    return shared_cache.SharedCache(
        directory,
        run.plan,
        shared_cache.trusted_ci_keys(run.plan),
        _issuer_fingerprints(run, make),
    )


def _issuer_fingerprints(run: _Run, make: Any) -> Any:
    """(provider, issuer) -> its fingerprint as a run issued by ``issuer`` computes it."""
    memo: dict[str, tuple[Fingerprinter, dict[str, str]]] = {}

    def of(provider: Provider, issuer: str) -> str:
        if issuer == run.options.issuer:
            return run.fingerprint(provider)
        if issuer not in memo:
            fpr = make(sandbox=run.options.sandbox, issuer=issuer)
            memo[issuer] = (fpr, {})
        fpr, done = memo[issuer]
        for dep in provider.depends_on:
            if dep not in done and dep in run.plan.providers:
                of(run.plan.providers[dep], issuer)
        if provider.name not in done:
            done[provider.name] = fpr.fingerprint(provider, done)
        return done[provider.name]

    return of


def _slots(executor: Executor, options: ProveOptions) -> int:
    """Providers at once: a cluster's worker threads (§10), else ``--jobs``."""
    return getattr(executor, "capacity", None) or max(1, options.jobs)


def _runlog(plan: Plan, options: ProveOptions, run_id: str, slots: int) -> RunLog:
    return RunLog(
        run_id=run_id,
        change=plan.change.id,
        slots=slots,
        sandbox=options.sandbox,
        providers=[
            (p.name, p.adapter, p.repository, p.depends_on) for p in plan.providers.values()
        ],
    )


def _record_run(run: _Run) -> None:
    """Write ``runs/<id>/run.json`` (slots, start/end, states) for the report's timeline."""
    masker = run.sink.masker
    run.runlog.settle(
        {
            name: (r.state, r.duration_ms, masker.optional(r.reason), [e.path for e in r.receipts])
            for name, r in run.sink.reports.items()
        }
    )
    for name, report in run.sink.reports.items():  # reused from --cache-from (§10)
        record = run.runlog.providers.get(name)
        if record is not None and report.origin == "shared":
            record.origin = "shared"
    run.runlog.write(run.run_dir)


async def _schedule(run: _Run) -> dict[str, TaskResult]:
    plan, options = run.plan, run.options
    estimates = run.state.load_durations(plan.change.id)
    # Every receipt, even a skipped provider's, names its content identity: a
    # repository git cannot identify refuses the run before anything starts.
    await anyio.to_thread.run_sync(_identify_all, run)
    hits = _likely_cached(run)
    tasks = [
        Task(p.name, p.depends_on, p.resources, 0.0 if p.name in hits else estimates.get(p.name))
        for p in plan.providers.values()
    ]
    interrupted = False
    try:
        async with ServiceManager(
            plan,
            workdirs=_Workdirs(run),
            env=dict(os.environ),
            secrets=run.sink.masker.secrets,
            log_dir=run.run_dir / "services",
        ) as services:

            async def run_task(task: Task) -> bool:
                return await _run_provider(run, plan.providers[task.name], services)

            def forward(event: TaskEvent) -> None:
                run.runlog.event(event)
                run.emit(RunEvent(event.task, event.kind, event.detail))
                if event.kind == "skipped":
                    services.release_unused(plan.providers[event.task].services)

            return await schedule(
                tasks,
                run_task,
                # a cluster runs as many jobs at once as its workers have threads
                slots=_slots(run.executor, options),
                fail_fast=options.fail_fast,
                on_event=forward,
            )
    except anyio.get_cancelled_exc_class():
        interrupted = True
        raise
    finally:
        if not interrupted:
            run.state.save_durations(plan.change.id, run.sink.durations())


def _likely_cached(run: _Run) -> set[str]:
    """Providers with a cache entry for their fingerprint: estimated to take no time, so the
    scheduler starts the ones that will run first and reuses the rest while they run.

    Only an ordering hint: whether a pass is reused is still decided by ``_cached``. Only
    providers without dependencies are looked at (a fingerprint names its upstream's), and
    only in repositories without ``setup`` (whose commands may install a tool the
    environment part resolves: such fingerprints keep being computed where they were).
    """
    if not run.options.use_cache:
        return set()
    plan, cache_dir = run.plan, run.state.cache
    hits = set()
    for provider in plan.providers.values():
        if provider.depends_on or provider.adapter in NEVER_CACHED:
            continue
        repos = registry.ADAPTERS[provider.adapter].repositories(provider, plan)
        if any(plan.repositories[r].setup for r in repos):
            continue
        try:
            fp = run.fingerprint(provider)
        except (ChangeloopError, OSError):
            continue  # raised again where the provider's run computes it
        if entry_path(cache_dir, fp).is_file():
            hits.add(provider.name)
    return hits


def _identify_all(run: _Run) -> None:
    for provider in run.plan.providers.values():
        for repo in registry.ADAPTERS[provider.adapter].repositories(provider, run.plan):
            run.boxes.identity(repo)


class _Workdirs(Mapping[str, Path]):
    """Services start in their repository's sandbox, which exists by then."""

    def __init__(self, run: _Run) -> None:
        self._run = run

    def __getitem__(self, repo: str) -> Path:
        return self._run.boxes.made(repo) or self._run.plan.repositories[repo].path

    def __iter__(self) -> Any:
        return iter(self._run.plan.repositories)

    def __len__(self) -> int:
        return len(self._run.plan.repositories)


async def _run_provider(run: _Run, provider: Provider, services: ServiceManager) -> bool:
    """One provider: reuse a cached pass, or make ready, lease, run, seal. Counts its services."""
    if _cached(run, provider, services):
        services.release_unused(provider.services)
        run.emit(RunEvent(provider.name, "cached"))
        return True
    started, clock = datetime.now(UTC), anyio.current_time()
    ctx_or_outcomes = await _prepare(run, provider)
    if isinstance(ctx_or_outcomes, list):
        services.release_unused(provider.services)
        outcomes, log = ctx_or_outcomes, None
    else:
        outcomes, log = await _execute(run, ctx_or_outcomes, services)
    sha, tail, where = log or (None, None, None)
    timing = Timing(started, datetime.now(UTC), sha, tail, where)
    duration_ms = int((anyio.current_time() - clock) * 1000)
    cacheable = not run.fingerprinter.identity_open(provider)
    return run.sink.finish(provider, outcomes, timing, duration_ms=duration_ms, cacheable=cacheable)


def _cached(run: _Run, provider: Provider, services: ServiceManager) -> bool:
    fp = run.fingerprint(provider)
    if not (
        run.options.use_cache
        and not run.fingerprinter.identity_open(provider)
        and not _ports_taken(run.plan, provider, services)
    ):
        return False
    if run.sink.reuse(provider, fp):
        return True
    found = run.shared.lookup(provider) if run.shared is not None else None
    if found is None:
        return False
    run.sink.adopt(provider, found, origin="shared")
    return True


async def _prepare(run: _Run, provider: Provider) -> RunContext | list[Outcome]:
    """Its sandboxes made and set up, its environment complete: a context, or why not."""
    adapter = registry.ADAPTERS[provider.adapter]
    repos = adapter.repositories(provider, run.plan)
    # Its services start in their repositories' sandboxes, which must exist (and be
    # set up) first; otherwise a service would run in the user's own checkout.
    ready = [*(repos if adapter.RUNS_COMMAND else ()), *_service_repositories(run.plan, provider)]
    for repo in dict.fromkeys(ready):
        if not await run.boxes.ready(repo, partial(_setup, run)):
            reason = f"setup of repository {repo} failed; see the setup receipt"
            return every_capability(provider, "inconclusive", reason)
    missing = next((n for n in provider.env_from if n not in os.environ), None)
    if missing and not _remote(run):  # a remote worker reads envFrom from its own environment
        reason = f"environment variable {missing} named in envFrom is not set"
        return every_capability(provider, "fail", reason)
    return _context(run, provider, repos)


def _context(run: _Run, provider: Provider, repos: tuple[str, ...]) -> RunContext:
    adapter = registry.ADAPTERS[provider.adapter]
    plan = run.plan
    if adapter.RUNS_COMMAND:
        workdirs = {repo: run.boxes.made(repo) or plan.repositories[repo].path for repo in repos}
    else:
        workdirs = {repo: plan.repositories[repo].path for repo in repos}
    provider_dir = run.run_dir / provider.name
    provider_dir.mkdir(parents=True, exist_ok=True)
    # external judges receipts of the providers it accepts, which may live in any
    # repository of the change: it sees every repository's content identity.
    seen = repos if adapter.RUNS_COMMAND else (*repos, *plan.repositories)
    return RunContext(
        plan=plan,
        provider=provider,
        workdirs=workdirs,
        sources={r: repo.path for r, repo in plan.repositories.items()},
        identities={repo: run.boxes.identity(repo) for repo in seen},
        run_dir=provider_dir,
        env={
            **environ(),  # os.environ decoded once per change of it, not once per provider
            **provider.env,
            **{n: os.environ[n] for n in provider.env_from if n in os.environ},
        },
        # Every process inherits the environment, so every envFrom value of the plan
        # is masked in every log, not only the values this provider named.
        secrets=run.sink.masker.secrets,
        now=datetime.now(UTC),
        executor=_Recording(run.executor),
        wiring=run.fingerprinter.wiring(provider),
        sandbox_mode=run.options.sandbox,
    )


async def _execute(
    run: _Run, ctx: RunContext, services: ServiceManager
) -> tuple[list[Outcome], tuple[str, str, dict[str, str] | None] | None]:
    provider = ctx.provider
    adapter = registry.ADAPTERS[provider.adapter]
    if _remote(run):  # its services start on the worker that runs its job (§10)
        services.release_unused(provider.services)
        outcomes = await _call_adapter(adapter.run, ctx, provider)
    else:
        async with services.lease(provider.services) as problems:
            if problems:
                reason = "; ".join(f.message for f in problems)
                outcomes = every_capability(provider, "fail", reason, tuple(problems))
            else:
                outcomes = await _call_adapter(adapter.run, ctx, provider)
    if not outcomes:
        # Only an adapter that reads evidence made elsewhere (external) may issue
        # no receipt at all; its claims then stay unproven, with its reason.
        why = adapter.missing_reason(ctx)
        text = why or f"provider {provider.name} issued no receipt"
        run.sink.note(provider.capability, f"{provider.capability}: {text}", replace_=True)
    assert isinstance(ctx.executor, _Recording)
    failure = ctx.executor.failure
    if failure is not None:  # the remote side could not give the command a fair run
        status, kind, message = failure
        finding = Finding(kind=kind, message=message, severity="error")
        outcomes = every_capability(provider, status, message, (finding,))  # type: ignore[arg-type]
    for repo, traced in ctx.executor.traced:  # the adapter's read stays pure (§9)
        run.sink.remember_traced(repo, traced)
    return outcomes, ctx.executor.last


class _Recording:
    """The run's executor, remembering the last job's log digest and tail for the receipt,
    and the grounding trace records its jobs returned (§11: mutation and --dry-run read them)."""

    def __init__(self, inner: Executor) -> None:
        self._inner = inner
        self.last: tuple[str, str, dict[str, str] | None] | None = None
        self.failure: tuple[str, str, str] | None = None
        self.traced: list[tuple[str, dict[str, dict[str, Any]]]] = []

    async def run(self, job: Job) -> JobResult:
        result = await self._inner.run(job)
        where = {"kind": "dask", "worker": result.worker} if result.worker else None
        self.last = (result.log_sha256, result.log_tail, where)
        self.failure = self.failure or result.failure
        if not result.files:
            return result  # no file collected, so no trace record (and no ~8 ms of imports)
        # grounding pulls in the report readers: only once a job returned files
        from changeloop.grounding.citations import records_of

        traced = records_of(result.files)
        if traced:
            self.traced.append((job.sandbox.repository, traced))
        return result


async def _call_adapter(run_adapter: Any, ctx: RunContext, provider: Provider) -> list[Outcome]:
    try:
        outcomes: list[Outcome] = await run_adapter(ctx)
        return outcomes
    except ChangeloopError as exc:
        reason = "; ".join(p.message for p in exc.problems)
    except (OSError, ValueError, KeyError, TypeError, RuntimeError) as exc:
        reason = f"adapter {provider.adapter} crashed: {type(exc).__name__}: {exc}"
    return every_capability(provider, "inconclusive", reason)


def _remote(run: _Run) -> bool:
    return bool(getattr(run.executor, "remote", False))


async def _setup(run: _Run, repo: str, workdir: Path) -> bool:
    # On a cluster too: its commands run as jobs (on one worker), so a failure is the same
    # setup receipt; every other worker repeats them before its first job (§10)
    return await run_setup(
        run.plan,
        repo,
        workdir,
        tree=run.boxes.identity(repo).tree,
        mode=run.options.sandbox,
        executor=run.executor,
        sink=run.sink,
        run_dir=run.run_dir,
    )


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


def nothing_to_prove(plan: Plan) -> Problem | None:
    if plan.evidence.claims or plan.evidence.requires:
        return None
    return Problem(
        code="nothing_to_prove",
        message=f"change {plan.change.id} declares no claims and no requires: nothing to prove",
        fix="add `claims:` or `requires:` to evidence.yaml",
    )

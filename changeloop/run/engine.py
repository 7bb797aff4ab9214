"""One ``prove`` run, composed from the stages of ``changeloop.run``.

The engine owns no state others write into; it wires the stages together:
``Sandboxes`` (identity, sandbox, setup), the ``Fingerprinter``, the
scheduler, services, the ``Executor`` that runs each adapter's job, the
``Sealer`` that turns outcomes into signed receipt records, and the
``ReceiptWriter`` that puts them on disk. Each provider's life ends in one
frozen :class:`~changeloop.records.ProviderReport`; :func:`prove` folds them
into its result (:mod:`changeloop.run.fold`). Events go to the views as typed
``RunEvent`` records.

Order of a provider's life: its dependencies finish → its fingerprint is
computed (upstream fingerprints included) → a cached pass is reused byte for
byte (:func:`~changeloop.run.seal.reused`), or → its repository's sandbox and
``setup`` are made ready once → its services are leased → the adapter prepares
a job, the executor runs it, the adapter reads the result → each outcome is
sealed → the record is written atomically. A provider that never finished
(Ctrl-C) leaves no receipt.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from datetime import UTC, datetime
from functools import partial
from pathlib import Path

import anyio
import anyio.lowlevel

from changeloop.caching import shared as shared_cache
from changeloop.errors import ChangeloopError, Problem
from changeloop.executors.job import JobResult
from changeloop.executors.opening import open_executor
from changeloop.fingerprints.wiring import change_inputs_of
from changeloop.model import Plan, Provider
from changeloop.outcome import Finding, Outcome
from changeloop.passenv import Snapshot
from changeloop.providers import registry
from changeloop.providers.base import RunContext
from changeloop.records import (
    EventSink,
    Observed,
    ProveOptions,
    ProveResult,
    ProviderReport,
    RunEvent,
)
from changeloop.run import fold, outputs
from changeloop.run.cache_reuse import verified_passes
from changeloop.run.carried import KnownInputs
from changeloop.run.order import likely_cached
from changeloop.run.provider_services import ServiceWorkdirs, ports_taken, service_repositories
from changeloop.run.run_json import record_run, slots
from changeloop.run.sandboxes import Sandboxes
from changeloop.run.seal import Bound, Timing, every_capability, reused
from changeloop.run.setup import run_setup
from changeloop.run.stages import RunStages, compose
from changeloop.sandboxes.place import sandbox_place
from changeloop.scheduling.scheduler import Task, TaskEvent, TaskResult, schedule
from changeloop.services import ServiceManager
from changeloop.verdict import decide
from changeloop.workspace.state import StateDir, ensure_gitignored

__all__ = ["nothing_to_prove", "prove"]


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
    # read once: every process and fingerprint of the run starts from this copy
    environ = Snapshot(os.environ)
    state = StateDir(plan.root)
    ensure_gitignored(plan.root)
    place = sandbox_place(plan.root)  # outside the checkout where the file system allows
    async with open_executor(plan, options, state.sandboxes, environ) as executor:
        boxes = Sandboxes(
            plan,
            options.sandbox,
            place.path,
            keep=options.keep_sandbox,
            trees=options.trees,
        )
        async with boxes:
            run = compose(
                plan,
                options,
                state,
                boxes,
                on_event,
                executor=executor,
                environ=environ,
                known=known,
            )
            try:
                results = await _schedule(run)
            except BaseException:
                await run.writer.drain()  # what finished before a cancel is on disk
                raise
            if executor.lost is not None:  # a cluster that lost its scheduler decides no more
                await run.writer.drain()
                raise ChangeloopError(executor.lost)
    for name, result in results.items():
        provider = plan.providers[name]
        if result.state == "skipped":
            _keep(
                run, run.sealer.skipped(provider, result.reason or "not run", _bound(run, provider))
            )
        elif result.state == "failed" and result.reason and name not in run.reports:
            _keep(run, run.sealer.could_not_run(provider, result.reason))  # its job raised
    lost = await run.writer.drain()  # the receipts are written in group commits (run/commit.py)
    reports = fold.withdraw(run.reports, lost, run.sealer.masker)
    record_run(run.runlog, reports, run.sealer.masker, run.run_dir)
    notes = list(run.shared.notes) if run.shared else []
    if place.note is not None and any(run.boxes.made(r) for r in plan.repositories):
        notes.append(place.note)
    if options.publish is not None:
        written, refused = shared_cache.publish(
            options.publish, plan.root, plan, reports, run.fingerprints
        )
        notes += refused
        notes.append(f"published {len(written)} signed receipt(s) to {options.publish}")
    verdict = decide(plan, fold.views(reports), fold.notes(reports, run.sealer.masker))
    return ProveResult(
        plan,
        run.run_id,
        run.run_dir,
        reports,
        verdict,
        masker=run.sealer.masker,
        notes=notes,
        observed=_observed(run),
    )


def _observed(run: RunStages) -> Observed:
    """What the no-change record keys this run's answer on (changeloop.nochange)."""
    trees = {repo: ident.tree for repo, ident in run.boxes.identities().items()}
    return Observed(
        trees=trees,
        environments=dict(run.fingerprinter.environments),
        fingerprints=dict(run.fingerprints),
        symlinks={repo: run.fingerprinter.symlinks(repo) for repo in trees},
        inputs={repo: dict(d) for repo, d in run.fingerprinter.inputs.items()},
        gitlinks={repo: run.fingerprinter.gitlinks(repo) for repo in run.fingerprinter.inputs},
        specs=dict(run.fingerprinter.specs),
        change_inputs=change_inputs_of(run.plan),
        ignored={repo: dict(d) for repo, d in run.fingerprinter.ignored.items()},
        key=None if run.options.sign_key else run.key,
        state=run.state.path,
    )


async def _schedule(run: RunStages) -> dict[str, TaskResult]:
    plan, options = run.plan, run.options
    estimates = run.state.load_durations(plan.change.id)
    # Every receipt, even a skipped provider's, names its content identity: a
    # repository git cannot identify refuses the run before anything starts.
    # abandoned on a signal: git's work is not worth keeping an interrupted run waiting
    await anyio.to_thread.run_sync(_identify_all, run, abandon_on_cancel=True)
    hits = (
        likely_cached(plan, run.state.cache, run.fingerprint, run.fingerprinter.inputs_unchanged)
        if options.use_cache
        else set()
    )
    run.expected = {name for name in plan.providers if name not in hits}
    if not run.expected:
        run.writer.hurry()  # every provider is likely reused: no fsync to share
    tasks = [
        Task(p.name, p.depends_on, p.resources, 0.0 if p.name in hits else estimates.get(p.name))
        for p in plan.providers.values()
    ]
    interrupted = False
    try:
        async with ServiceManager(
            plan,
            workdirs=ServiceWorkdirs(plan, run.boxes),
            env=run.environ.environ,
            secrets=run.sealer.masker.secrets,
            log_dir=run.run_dir / "services",
            whole_run=True,  # its end is the run's: what the run's processes left goes then
        ) as services:

            async def run_task(task: Task) -> bool:
                report = await _run_provider(run, plan.providers[task.name], services)
                _keep(run, report)
                return all(e.status == "pass" for e in report.receipts)

            def forward(event: TaskEvent) -> None:
                run.runlog.event(event)
                detail = event.detail
                if event.kind == "finished":  # what its receipts say, not only "it returned"
                    detail = fold.finished_word(run.reports.get(event.task), detail)
                if event.kind != "started":  # said by _run_provider: a cached one never runs
                    run.emit(RunEvent(event.task, event.kind, detail))
                if event.kind == "skipped":
                    services.release_unused(plan.providers[event.task].services)

            return await schedule(
                tasks,
                run_task,
                # a cluster runs as many jobs at once as its workers have threads
                slots=slots(run.executor, options),
                fail_fast=options.fail_fast,
                on_event=forward,
                host_wide=True,  # named resources are held across processes on the host
            )
    except anyio.get_cancelled_exc_class():
        interrupted = True
        raise
    finally:
        if not interrupted:
            run.state.save_durations(plan.change.id, fold.durations(run.reports, plan))


def _identify_all(run: RunStages) -> None:
    for provider in run.plan.providers.values():
        for repo in provider.settled.repositories:
            run.boxes.identity(repo)


def _keep(run: RunStages, report: ProviderReport) -> None:
    """A provider's record, kept for the fold and handed to the writer at once."""
    run.reports[report.name] = report
    run.writer.write(report, run.fingerprints.get(report.name))
    if report.name in run.expected:
        run.expected.discard(report.name)
        if not run.expected:  # the last that runs is written: the reuses have no fsync
            run.writer.hurry()


def _bound(run: RunStages, provider: Provider) -> Bound:
    repos = provider.settled.repositories
    return Bound(
        fingerprint=run.fingerprint(provider),
        wiring=run.fingerprinter.wiring(provider),
        identities={repo: run.boxes.identity(repo) for repo in repos},
        external_links={repo: run.fingerprinter.external_symlinks(repo) for repo in repos},
    )


async def _run_provider(
    run: RunStages, provider: Provider, services: ServiceManager
) -> ProviderReport:
    """One provider: reuse a cached pass, or make ready, lease, run, seal. Counts its services."""
    # A reuse never waits on anything: without this turn, one worker would reuse every
    # cached pass before a provider that runs got as far as starting its process.
    await anyio.lowlevel.checkpoint()
    cached = await _cached(run, provider, services)
    if cached is not None:
        services.release_unused(provider.services)
        run.emit(RunEvent(provider.name, "cached"))
        return cached
    streamed = run.run_dir / provider.name / f"{provider.name}.log"
    run.emit(RunEvent(provider.name, "started", str(streamed)))  # views count tests in it
    # time.monotonic() is what anyio.current_time() returns on asyncio
    started, clock = datetime.now(UTC), time.monotonic()
    ctx_or_outcomes = await _prepare(run, provider)
    result: JobResult | None = None
    if isinstance(ctx_or_outcomes, list):
        services.release_unused(provider.services)
        outcomes = ctx_or_outcomes
        notes: tuple[tuple[str, str], ...] = ()
    else:
        outcomes, result, notes = await _execute(run, ctx_or_outcomes, services)
    where = {"kind": "dask", "worker": result.worker} if result and result.worker else None
    timing = Timing(
        started,
        datetime.now(UTC),
        result.log_sha256 if result else None,
        result.log_tail if result else None,
        where,
    )
    report = run.sealer.ran(
        provider,
        outcomes,
        timing,
        _bound(run, provider),
        duration_ms=int((time.monotonic() - clock) * 1000),
        cacheable=not run.fingerprinter.identity_open(provider),
    )
    if (
        report.cache
        and isinstance(ctx_or_outcomes, RunContext)
        and outputs.keeps(run, provider, ctx_or_outcomes.workdirs)
    ):
        # what it made, kept with its cache entry for dependents of a later reuse (a thread:
        # files are read and written; no thread at all for a provider that declares none)
        await anyio.to_thread.run_sync(outputs.keep, run, provider, ctx_or_outcomes.workdirs)
    return fold.with_notes(report, notes)


async def _cached(
    run: RunStages, provider: Provider, services: ServiceManager
) -> ProviderReport | None:
    """Its cached pass (this workspace's cache, else --cache-from), as the record of a reuse."""
    fp = run.fingerprint(provider)
    if not (
        run.options.use_cache
        and not run.fingerprinter.identity_open(provider)
        and not ports_taken(run.plan, provider, services)
    ):
        return None
    rel = run.sealer.run_rel
    if outputs.needed(run, provider, services):
        # A provider that runs depends on it: what it makes must be in the sandbox, as a
        # clean run would leave it — restored from its cache entry, or it runs again.
        repo = provider.repository
        if repo is None or not outputs.restorable(run, provider):
            return None
        verified = verified_passes(run.state.cache, fp, run.key.public_key())
        if verified is None or not await run.boxes.ready(repo, partial(_setup, run)):
            return None
        workdir = run.boxes.made(repo) or run.plan.repositories[repo].path
        if not await outputs.restore(run, provider, workdir):
            return None
        return reused(provider, verified, origin="local", run_rel=rel)
    verified = verified_passes(run.state.cache, fp, run.key.public_key())
    if verified is not None:
        return reused(provider, verified, origin="local", run_rel=rel)
    found = run.shared.lookup(provider) if run.shared is not None else None
    if found is None:
        return None
    return reused(provider, found, origin="shared", run_rel=rel)


async def _prepare(run: RunStages, provider: Provider) -> RunContext | list[Outcome]:
    """Its sandboxes made and set up, its environment complete: a context, or why not."""
    facts = provider.settled
    repos = facts.repositories
    # Its services start in their repositories' sandboxes, which must exist (and be
    # set up) first; otherwise a service would run in the user's own checkout.
    ready = [*(repos if facts.runs_command else ()), *service_repositories(run.plan, provider)]
    for repo in dict.fromkeys(ready):
        if not await run.boxes.ready(repo, partial(_setup, run)):
            reason = f"setup of repository {repo} failed; see the setup receipt"
            return every_capability(provider, "inconclusive", reason)
    missing = next((n for n in provider.env_from if n not in run.environ.environ), None)
    if missing and not run.executor.remote:  # a remote worker reads envFrom from its own env
        reason = f"environment variable {missing} named in envFrom is not set"
        return every_capability(provider, "fail", reason)
    return _context(run, provider, repos)


def _context(run: RunStages, provider: Provider, repos: tuple[str, ...]) -> RunContext:
    runs_command = provider.settled.runs_command
    plan = run.plan
    if runs_command:
        workdirs = {repo: run.boxes.made(repo) or plan.repositories[repo].path for repo in repos}
    else:
        workdirs = {repo: plan.repositories[repo].path for repo in repos}
    provider_dir = run.run_dir / provider.name
    provider_dir.mkdir(parents=True, exist_ok=True)
    # external judges receipts of the providers it accepts, which may live in any
    # repository of the change: it sees every repository's content identity.
    seen = repos if runs_command else (*repos, *plan.repositories)
    return RunContext(
        plan=plan,
        provider=provider,
        workdirs=workdirs,
        sources={r: repo.path for r, repo in plan.repositories.items()},
        identities={repo: run.boxes.identity(repo) for repo in seen},
        run_dir=provider_dir,
        env={
            # cut to what the provider may see: the fixed set, its passEnv and envFrom
            # (changeloop.passenv)
            **run.environ.cut(provider.pass_env, provider.env_from),
            # Python run in place writes no __pycache__ into the content it is bound to
            # (decision 105); the wiring's own env may say otherwise
            "PYTHONDONTWRITEBYTECODE": "1",
            **provider.env,
        },
        # Every process inherits the environment, so every envFrom value of the plan
        # is masked in every log, not only the values this provider named.
        secrets=run.sealer.masker.secrets,
        now=datetime.now(UTC),
        executor=run.executor,
        wiring=run.fingerprinter.wiring(provider),
        sandbox_mode=run.options.sandbox,
        environ=run.environ,
    )


async def _execute(
    run: RunStages, ctx: RunContext, services: ServiceManager
) -> tuple[list[Outcome], JobResult | None, tuple[tuple[str, str], ...]]:
    """The adapter's work under its services' lease: outcomes, the job's result, notes."""
    provider = ctx.provider
    # Remote: its services start on the worker that runs its job. None named (most
    # providers): nothing to lease, no context manager to enter.
    if run.executor.remote or not provider.services:
        services.release_unused(provider.services)
        outcomes, result = await _adapter_work(run, ctx)
    else:
        async with services.lease(provider.services) as refused:
            problems, result = refused, None
            if not refused:
                outcomes, result = await _adapter_work(run, ctx)
                problems = services.lost(provider.services)  # one died under it: it fails
            if problems:
                reason = "; ".join(f.message for f in problems)
                outcomes = every_capability(provider, "fail", reason, tuple(problems))
    notes: tuple[tuple[str, str], ...] = ()
    if not outcomes:
        # Only an adapter that reads evidence made elsewhere (external) may issue
        # no receipt at all; its claims then stay unproven, with its reason.
        adapter = registry.ADAPTERS[provider.adapter]
        why = adapter.missing_reason(ctx) or f"provider {provider.name} issued no receipt"
        notes = ((provider.capability, f"{provider.capability}: {why}"),)
    return outcomes, result, notes


async def _adapter_work(run: RunStages, ctx: RunContext) -> tuple[list[Outcome], JobResult | None]:
    """prepare → the executor runs the job → read; or the adapter's own run (mutation)."""
    provider = ctx.provider
    adapter = registry.ADAPTERS[provider.adapter]
    try:
        if adapter.run is not None:  # it orchestrates several jobs itself
            return await adapter.run(ctx), None
        prepared = adapter.prepare(ctx)
        if isinstance(prepared, list):  # decided without a command (or refused before one)
            return prepared, None
        result = await run.executor.run(prepared)
    except ChangeloopError as exc:
        reason = "; ".join(p.message for p in exc.problems)
        return every_capability(provider, "inconclusive", reason), None
    if result.files:  # grounding's trace records: mutation and --dry-run read them later
        from changeloop.grounding.citations import records_of, remember  # noqa: PLC0415 - only a traced job needs grounding (and the report readers it imports)

        traced = records_of(result.files)
        if traced:
            remember(run.plan.root, run.plan.change.id, prepared.sandbox.repository, traced)
    if result.failure is not None:  # the remote side could not give the command a fair run
        status, kind, message = result.failure
        finding = Finding(kind=kind, message=message, severity="error")
        return every_capability(provider, status, message, (finding,)), result  # type: ignore[arg-type]
    return adapter.read(prepared, result), result


async def _setup(run: RunStages, repo: str, workdir: Path) -> bool:
    # On a cluster too: its commands run as jobs (on one worker), so a failure is the same
    # setup receipt; every other worker repeats them before its first job
    failed = await run_setup(
        run.plan,
        repo,
        workdir,
        tree=run.boxes.identity(repo).tree,
        mode=run.options.sandbox,
        executor=run.executor,
        run_dir=run.run_dir,
    )
    if failed is None:
        return True
    pseudo = failed.provider
    bound = Bound(
        fingerprint=run.fingerprint(pseudo),
        wiring=run.fingerprinter.wiring(pseudo),
        identities={repo: run.boxes.identity(repo)},
        external_links={repo: run.fingerprinter.external_symlinks(repo)},
    )
    entry = run.sealer.seal(pseudo, failed.outcome, failed.timing, bound)
    report = ProviderReport(
        pseudo.name, pseudo.adapter, pseudo.repository, state="ran", receipts=(entry,)
    )
    _keep(run, report)
    return False


def nothing_to_prove(plan: Plan) -> Problem | None:
    if plan.evidence.claims or plan.evidence.requires:
        return None
    return Problem(
        code="nothing_to_prove",
        message=f"change {plan.change.id} declares no claims and no requires: nothing to prove",
        fix="add `claims:` or `requires:` to evidence.yaml",
    )

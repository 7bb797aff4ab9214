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

The stages are made in ``run/stages.py``; the glue around the providers' lives
has its own modules: ``run/cache_from.py`` (``--cache-from``), ``run/run_json.py``
(``run.json``), ``run/order.py`` (likely cached first), ``run/recording.py`` (what
a job leaves for the receipt), ``run/provider_services.py`` (services' sandboxes
and ports).
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

import anyio

from changeloop.caching import shared as shared_cache
from changeloop.errors import ChangeloopError, Problem
from changeloop.executors import open_executor
from changeloop.model import Plan, Provider
from changeloop.outcome import Finding, Outcome
from changeloop.process.spawn import environ
from changeloop.providers import registry
from changeloop.providers.base import RunContext
from changeloop.records import (
    EventSink,
    Observed,
    ProveOptions,
    ProveResult,
    RunEvent,
)
from changeloop.run.carried import KnownInputs
from changeloop.run.order import likely_cached
from changeloop.run.provider_services import ServiceWorkdirs, ports_taken, service_repositories
from changeloop.run.recording import RecordingExecutor
from changeloop.run.run_json import record_run, slots
from changeloop.run.sandboxes import Sandboxes
from changeloop.run.setup import run_setup
from changeloop.run.sink import Timing, every_capability
from changeloop.run.stages import RunStages, compose
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
            run = compose(plan, options, state, boxes, on_event, executor=executor, known=known)
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
    record_run(run.runlog, run.sink.reports, run.sink.masker, run.run_dir)
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
        key=None if run.options.sign_key else run.key,
        state=run.state.path,
    )


async def _schedule(run: RunStages) -> dict[str, TaskResult]:
    plan, options = run.plan, run.options
    estimates = run.state.load_durations(plan.change.id)
    # Every receipt, even a skipped provider's, names its content identity: a
    # repository git cannot identify refuses the run before anything starts.
    await anyio.to_thread.run_sync(_identify_all, run)
    hits = likely_cached(plan, run.state.cache, run.fingerprint) if options.use_cache else set()
    tasks = [
        Task(p.name, p.depends_on, p.resources, 0.0 if p.name in hits else estimates.get(p.name))
        for p in plan.providers.values()
    ]
    interrupted = False
    try:
        async with ServiceManager(
            plan,
            workdirs=ServiceWorkdirs(plan, run.boxes),
            env=dict(os.environ),
            secrets=run.sink.masker.secrets,
            log_dir=run.run_dir / "services",
        ) as services:

            async def run_task(task: Task) -> bool:
                return await _run_provider(run, plan.providers[task.name], services)

            def forward(event: TaskEvent) -> None:
                run.runlog.event(event)
                detail = event.detail
                if event.kind == "finished":  # what its receipts say, not only "it returned"
                    detail = run.sink.finished_word(event.task, detail)
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
            )
    except anyio.get_cancelled_exc_class():
        interrupted = True
        raise
    finally:
        if not interrupted:
            run.state.save_durations(plan.change.id, run.sink.durations())


def _identify_all(run: RunStages) -> None:
    for provider in run.plan.providers.values():
        for repo in provider.settled.repositories:
            run.boxes.identity(repo)


async def _run_provider(run: RunStages, provider: Provider, services: ServiceManager) -> bool:
    """One provider: reuse a cached pass, or make ready, lease, run, seal. Counts its services."""
    if _cached(run, provider, services):
        services.release_unused(provider.services)
        run.emit(RunEvent(provider.name, "cached"))
        return True
    streamed = run.run_dir / provider.name / f"{provider.name}.log"
    run.emit(RunEvent(provider.name, "started", str(streamed)))  # views count tests in it
    # time.monotonic() is what anyio.current_time() returns on asyncio, without looking
    # up the backend twice per provider
    started, clock = datetime.now(UTC), time.monotonic()
    ctx_or_outcomes = await _prepare(run, provider)
    if isinstance(ctx_or_outcomes, list):
        services.release_unused(provider.services)
        outcomes, log = ctx_or_outcomes, None
    else:
        outcomes, log = await _execute(run, ctx_or_outcomes, services)
    sha, tail, where = log or (None, None, None)
    timing = Timing(started, datetime.now(UTC), sha, tail, where)
    duration_ms = int((time.monotonic() - clock) * 1000)
    cacheable = not run.fingerprinter.identity_open(provider)
    return run.sink.finish(provider, outcomes, timing, duration_ms=duration_ms, cacheable=cacheable)


def _cached(run: RunStages, provider: Provider, services: ServiceManager) -> bool:
    fp = run.fingerprint(provider)
    if not (
        run.options.use_cache
        and not run.fingerprinter.identity_open(provider)
        and not ports_taken(run.plan, provider, services)
    ):
        return False
    if run.sink.reuse(provider, fp):
        return True
    found = run.shared.lookup(provider) if run.shared is not None else None
    if found is None:
        return False
    run.sink.adopt(provider, found, origin="shared")
    return True


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
    missing = next((n for n in provider.env_from if n not in os.environ), None)
    if missing and not _remote(run):  # a remote worker reads envFrom from its own environment
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
            **environ(),  # os.environ decoded once per change of it, not once per provider
            **provider.env,
            **{n: os.environ[n] for n in provider.env_from if n in os.environ},
        },
        # Every process inherits the environment, so every envFrom value of the plan
        # is masked in every log, not only the values this provider named.
        secrets=run.sink.masker.secrets,
        now=datetime.now(UTC),
        executor=RecordingExecutor(run.executor),
        wiring=run.fingerprinter.wiring(provider),
        sandbox_mode=run.options.sandbox,
    )


async def _execute(
    run: RunStages, ctx: RunContext, services: ServiceManager
) -> tuple[list[Outcome], tuple[str, str, dict[str, str] | None] | None]:
    provider = ctx.provider
    adapter = registry.ADAPTERS[provider.adapter]
    # Remote: its services start on the worker that runs its job (§10). None named (most
    # providers): nothing to lease, no context manager to enter.
    if _remote(run) or not provider.services:
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
    assert isinstance(ctx.executor, RecordingExecutor)
    failure = ctx.executor.failure
    if failure is not None:  # the remote side could not give the command a fair run
        status, kind, message = failure
        finding = Finding(kind=kind, message=message, severity="error")
        outcomes = every_capability(provider, status, message, (finding,))  # type: ignore[arg-type]
    for repo, traced in ctx.executor.traced:  # the adapter's read stays pure (§9)
        run.sink.remember_traced(repo, traced)
    return outcomes, ctx.executor.last


async def _call_adapter(run_adapter: Any, ctx: RunContext, provider: Provider) -> list[Outcome]:
    try:
        outcomes: list[Outcome] = await run_adapter(ctx)
        return outcomes
    except ChangeloopError as exc:  # untrusted input refused at its edge, by name
        reason = "; ".join(p.message for p in exc.problems)
    except OSError as exc:  # the environment said no (a path, a permission, a full disk)
        where = f" {exc.filename}" if exc.filename else ""
        reason = f"provider {provider.name} could not run:{where} {exc.strerror or exc}"
    # Anything else is our bug: it crashes the run (exit 3, a crash log), never a receipt.
    return every_capability(provider, "inconclusive", reason)


def _remote(run: RunStages) -> bool:
    return bool(getattr(run.executor, "remote", False))


async def _setup(run: RunStages, repo: str, workdir: Path) -> bool:
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


def nothing_to_prove(plan: Plan) -> Problem | None:
    if plan.evidence.claims or plan.evidence.requires:
        return None
    return Problem(
        code="nothing_to_prove",
        message=f"change {plan.change.id} declares no claims and no requires: nothing to prove",
        fix="add `claims:` or `requires:` to evidence.yaml",
    )

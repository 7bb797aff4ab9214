"""The stages of one ``prove`` run, made once before anything is scheduled.

``compose`` builds them from the plan and the options: the signing key, the
one masker (inside the ``Sealer``), the ``Fingerprinter``, the ``ReceiptWriter``,
the run's log and, for ``--cache-from``, the shared cache. ``changeloop.run.engine``
then drives them; none writes into another's state.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from changeloop.caching.shared import SharedCache
from changeloop.executors.job import Executor
from changeloop.masking import Masker
from changeloop.model import Plan, Provider
from changeloop.passenv import Snapshot
from changeloop.records import EventSink, ProveOptions, ProviderReport, RunEvent
from changeloop.run.cache_from import open_cache_from
from changeloop.run.carried import KnownInputs
from changeloop.run.fingerprinter import Fingerprinter, hmac_key
from changeloop.run.run_json import new_runlog, slots
from changeloop.run.runlog import RunLog
from changeloop.run.sandboxes import Sandboxes
from changeloop.run.seal import Sealer
from changeloop.run.writer import ReceiptWriter
from changeloop.signing.keys import load_private_key, workspace_key
from changeloop.workspace.state import StateDir

__all__ = ["RunStages", "compose"]


@dataclass
class RunStages:
    """The stages of one run, as composed by :func:`compose` (none writes another's state)."""

    plan: Plan
    options: ProveOptions
    run_id: str
    run_dir: Path
    state: StateDir
    boxes: Sandboxes
    fingerprinter: Fingerprinter
    sealer: Sealer
    writer: ReceiptWriter
    executor: Executor
    emit: EventSink
    runlog: RunLog  # runs/<id>/run.json: slots and times, from the scheduler's events
    key: Any  # the key that signs this run's receipts
    environ: Snapshot  # the environment as the run found it when it started
    fingerprints: dict[str, str] = field(default_factory=dict)  # written by fingerprint() only
    shared: SharedCache | None = None  # --cache-from DIR
    # each provider's record as it finishes (the engine's own; folded at the end)
    reports: dict[str, ProviderReport] = field(default_factory=dict)
    # the providers expected to run (not hinted as reused) that have not finished yet
    expected: set[str] = field(default_factory=set)

    def fingerprint(self, provider: Provider) -> str:
        if provider.name not in self.fingerprints:
            fp = self.fingerprinter.fingerprint(provider, self.fingerprints)
            self.fingerprints[provider.name] = fp
        return self.fingerprints[provider.name]


def compose(
    plan: Plan,
    options: ProveOptions,
    state: StateDir,
    boxes: Sandboxes,
    on_event: EventSink | None,
    *,
    executor: Executor,
    environ: Snapshot,
    known: Mapping[str, KnownInputs] | None = None,
) -> RunStages:
    """A new run directory and every stage of the run, wired to one another; every stage
    reads the environment from ``environ``, the one copy the run took as it started."""
    run_id, run_dir = state.new_run_dir()
    key = load_private_key(options.sign_key) if options.sign_key else workspace_key(plan.root)
    # One masker for the run: every string written passes through it.
    masker = Masker.from_plan(plan, environ.environ)
    fingerprinter = Fingerprinter(
        plan,
        boxes.identity,
        sandbox=options.sandbox,
        issuer=options.issuer,
        hmac_key=hmac_key(key),
        state_path=state.path,
        known=known,
        environ=environ.environ,
    )
    view = on_event or (lambda _e: None)

    def emit(event: RunEvent) -> None:
        view(RunEvent(event.provider, event.kind, masker.optional(event.detail)))

    sealer = Sealer.of(
        plan,
        key=key,
        masker=masker,
        sandbox=options.sandbox,
        issuer=options.issuer,
        url=options.url,
        run_rel=run_dir.relative_to(plan.root).as_posix(),
    )
    run = RunStages(
        plan,
        options,
        run_id,
        run_dir,
        state,
        boxes,
        fingerprinter,
        sealer,
        ReceiptWriter(state, run_dir, plan.change.id),
        executor,
        emit,
        new_runlog(plan, options, run_id, slots(executor, options)),
        key,
        environ,
    )
    if options.cache_from is not None:
        run.shared = open_cache_from(
            options.cache_from,
            plan,
            fingerprint=run.fingerprint,
            issuer=options.issuer,
            sandbox=options.sandbox,
            identity=boxes.identity,
            hmac_key=hmac_key(key),
            state_path=state.path,
        )
    return run

"""A run's ``runs/<id>/run.json``: its ``RunLog`` made at the start and settled at the end.

The scheduler's events fill in slots and times while the run goes (``RunLog.event``);
the run's reports, the only record of how each provider ended, settle it.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from changeloop.executors.job import Executor
from changeloop.masking import Masker
from changeloop.model import Plan
from changeloop.records import ProveOptions, ProviderReport
from changeloop.run.runlog import RunLog

__all__ = ["new_runlog", "record_run", "slots"]


def slots(executor: Executor, options: ProveOptions) -> int:
    """Providers at once: a cluster's worker threads (docs/scale-out.md), else ``--jobs``."""
    return executor.capacity or max(1, options.jobs)


def new_runlog(plan: Plan, options: ProveOptions, run_id: str, slots: int) -> RunLog:
    """The run's log before anything ran: every provider of the plan, with its wiring."""
    return RunLog(
        run_id=run_id,
        change=plan.change.id,
        slots=slots,
        sandbox=options.sandbox,
        providers=[
            (p.name, p.adapter, p.repository, p.depends_on) for p in plan.providers.values()
        ],
    )


def record_run(
    runlog: RunLog, reports: Mapping[str, ProviderReport], masker: Masker, run_dir: Path
) -> None:
    """Write ``runs/<id>/run.json`` (slots, start/end, states) for the report's timeline."""
    runlog.settle(
        {
            name: (r.state, r.duration_ms, masker.optional(r.reason), [e.path for e in r.receipts])
            for name, r in reports.items()
        }
    )
    for name, report in reports.items():  # reused from --cache-from (docs/scale-out.md)
        record = runlog.providers.get(name)
        if record is not None and report.origin == "shared":
            record.origin = "shared"
    runlog.write(run_dir)

"""``RecordingExecutor``: the run's executor as one provider's adapter sees it.

The adapter only gets a ``JobResult`` back; the receipt also needs the last
job's log digest and tail, whether the remote side gave the command a fair run,
and the grounding trace records its jobs returned (§11: mutation and
``--dry-run`` read them). This wrapper keeps those for the engine, so the
adapter's ``read`` stays pure.
"""

from __future__ import annotations

from typing import Any

from changeloop.executors.job import Executor, Job, JobResult

__all__ = ["RecordingExecutor"]


class RecordingExecutor:
    """Runs each job on ``inner`` and remembers what the receipt needs of it."""

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

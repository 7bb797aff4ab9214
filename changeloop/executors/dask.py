"""``DaskExecutor``: the coordinator's side of running jobs on a Dask cluster.

Only ``Job → JobResult`` leaves this process; ordering, locks, fingerprints,
the cache, signing and the verdict stay here, and so do the keys. Each job is
pinned to one worker chosen here (least busy, or the worker that ran the
providers it depends on, so what they generated is there). The repository's
content goes to a worker once per content tree; a worker that vanishes while
it holds a job gets the job retried once on another worker, then the job is
``inconclusive`` with finding ``worker-lost``. Cancelling the run (Ctrl-C)
cancels every remote job, and each runner ends its process group.
"""

from __future__ import annotations

import contextlib
import logging
import secrets
from collections.abc import Mapping
from dataclasses import replace
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

import anyio
from distributed import Client
from distributed.client import _wait

from changeloop.errors import ChangeloopError, Problem
from changeloop.executors import worker
from changeloop.executors.dask_checks import check_environment, content_trees
from changeloop.executors.dask_results import failed_result, job_result
from changeloop.executors.dask_workers import WorkerBook
from changeloop.executors.job import Job, JobResult
from changeloop.executors.shipping import pack_repository
from changeloop.executors.wire import WireJob, WireRepo, WireResult
from changeloop.model import Plan, SandboxMode

CONNECT_TIMEOUT_S = 5
WATCH_S = 0.5  # how often a waiting job checks that its worker is still there
# Jobs in flight per worker thread: one running and two waiting on the worker, so a worker
# starts its next job without waiting for the coordinator's round trip (receipts, next job),
# even when the coordinator falls behind by one job's length.
QUEUED = 3
WARM_WAIT_S = 5  # at the end of a run: how long prepares still under way may take
SILENCE_CHECKS = 5  # heartbeats are looked at this many times per --dask-worker-timeout
QUIET_LOGGERS = ("distributed.client", "distributed.core", "distributed.comm")
GONE = "left the cluster (its process ended, or its connection to the scheduler did)"


class _SchedulerLost(Exception):
    """The client lost its scheduler: no job can finish or be retried any more."""


class DaskExecutor:
    remote = True

    def __init__(
        self,
        plan: Plan,
        address: str,
        mode: SandboxMode,
        state_dir: Path,
        *,
        cap: int | None = None,
        security: Any = None,
        silence_s: float = 30.0,
    ) -> None:
        self._plan = plan
        self._security = security  # distributed.Security: TLS with the client certificate
        self._silence_s = silence_s  # a worker without a heartbeat this long is lost
        self._cap = cap  # --jobs as given: at most this many jobs in flight on the cluster
        self._address = address
        self._mode = mode
        self._state_dir = state_dir
        self._session = secrets.token_hex(8)
        self._client: Any = None
        self._book = WorkerBook(silence_s)  # who is alive, busy, lost; where jobs went
        self._refreshed = float("-inf")
        self._identified = float("-inf")  # when the scheduler last told the heartbeats
        self.lost: Problem | None = None  # set once the scheduler is gone
        self._log_levels: dict[str, int] = {}
        self._shipped: set[tuple[str, str]] = set()  # (worker, tree)
        self._archives: dict[str, bytes] = {}  # tree -> content archive
        self._trees: dict[str, str] = {}  # repository -> its content tree, as shipped
        self._warming: list[tuple[str, Any]] = []  # (worker, prepare future): kept, so it runs
        self._warm_joiners = False  # after prewarm: a worker that joins is warmed too

    # -- before the run ----------------------------------------------------------
    async def identify(self) -> None:
        """The content tree of every repository a job needs; a submodule refuses the run."""
        self._trees.update(await content_trees(self._plan, self._mode))

    async def check_environment(self) -> None:
        """Every worker runs our worker side and resolves each executable to the same bytes."""
        await check_environment(self._client, self._plan, self._address)

    async def prewarm(self) -> None:
        """Every worker makes this run's sandboxes now, before the first job needs them.

        Fire and forget: a job that reaches a worker first still asks for the
        content it lacks; a failure found here (content-mismatch) is the job's.
        A worker that joins later is asked when the coordinator first sees it.
        """
        self._warm_joiners = True
        await self._warm(sorted(self._book.workers))

    async def _warm(self, addresses: list[str]) -> None:
        for repo, tree in self._trees.items():
            archive = await self._archive(repo, tree)
            wire_repo = WireRepo(repo, tree, self._setup_of(repo))
            for address in addresses:
                fresh = (address, tree) not in self._shipped
                future = self._client.submit(
                    worker.prepare,
                    self._session,
                    wire_repo,
                    archive if fresh else None,
                    key=f"changeloop-prepare-{repo}-{secrets.token_hex(8)}",
                    workers=[address],
                    allow_other_workers=False,
                    pure=False,
                    retries=0,
                )
                self._warming.append((address, future))
                self._shipped.add((address, tree))

    # -- lifecycle -------------------------------------------------------------
    async def connect(self) -> None:
        # Dask's client logs its own reconnection attempts and tracebacks; this run says
        # what they mean instead (dask_unreachable, worker-lost, dask_scheduler_lost)
        for name in QUIET_LOGGERS:
            logger = logging.getLogger(name)
            self._log_levels[name] = logger.level
            logger.setLevel(logging.CRITICAL)
        try:
            with anyio.fail_after(CONNECT_TIMEOUT_S + 2):
                self._client = await Client(  # type: ignore[no-untyped-call]
                    self._address,
                    asynchronous=True,
                    timeout=CONNECT_TIMEOUT_S,
                    security=self._security,
                )
            await self._refresh()
        except (OSError, TimeoutError, ValueError, _SchedulerLost) as exc:
            await self.close()
            raise ChangeloopError(
                Problem(
                    code="dask_unreachable",
                    message=f"cannot reach the Dask scheduler at {self._address}: {exc}",
                    fix="start one (dask scheduler) and workers, or check --dask-scheduler / "
                    "CHANGELOOP_DASK_SCHEDULER",
                )
            ) from exc
        if not self._book.workers:
            await self.close()
            raise ChangeloopError(
                Problem(
                    code="dask_no_workers",
                    message=f"the Dask scheduler at {self._address} has no workers",
                    fix="start at least one: dask worker " + self._address,
                )
            )

    @property
    def capacity(self) -> int:
        """Jobs in flight on the cluster: three per worker thread, capped by ``--jobs`` if given.

        The others wait on their worker (pinned there), so the worker never idles
        while the coordinator seals the last receipt and builds the next job.
        """
        threads = max(1, sum(self._book.workers.values())) * QUEUED
        return min(threads, self._cap) if self._cap is not None else threads

    async def close(self) -> None:
        warming, self._warming = self._warming, []
        client, self._client = self._client, None
        try:
            if client is not None:
                await self._close(client, warming)
        finally:
            for name, level in self._log_levels.items():
                logging.getLogger(name).setLevel(level)

    async def _close(self, client: Any, warming: list[tuple[str, Any]]) -> None:
        gone = self.lost is not None
        with anyio.CancelScope(shield=True), anyio.move_on_after(2 if gone else 10):
            alive = sorted(a for a in self._book.workers if a not in self._book.lost)
            if not gone and alive:
                with contextlib.suppress(Exception):  # prepares still under way finish first
                    running = [f for address, f in warming if address in alive]
                    await self._wait(running, WARM_WAIT_S, client)
                with contextlib.suppress(Exception):  # a gone worker has nothing to clean
                    # sent, not awaited: the workers clean up while this run writes its verdict
                    await client.run(worker.cleanup, self._session, workers=alive, wait=False)
            with contextlib.suppress(Exception):
                await client.close()

    # -- Executor ----------------------------------------------------------------
    async def run(self, job: Job) -> JobResult:
        started = datetime.now(UTC)
        tried: list[str] = []
        try:
            for _attempt in range(2):
                if anyio.current_time() - self._refreshed > WATCH_S or tried:
                    await self._refresh()  # workers that joined, left or fell silent since
                address = self._book.choose(job, tried)
                if address is None:
                    break
                tried.append(address)
                answer = await self._submit(job, address)
                if answer is not None:
                    self._book.placed[job.provider.name] = address
                    # unpacking and reading files: off the event loop, which seals receipts
                    return await anyio.to_thread.run_sync(job_result, job, answer, started)
        except _SchedulerLost:
            assert self.lost is not None
            failure = ("inconclusive", "scheduler-lost", self.lost.message)
            return failed_result(job, started, failure, tried[-1:])
        where = ", ".join(f"{a} ({self._book.why.get(a, GONE)})" for a in tried) or "none left"
        why = f"the worker running it was lost: {where}; retried once, never counted a pass"
        return failed_result(job, started, ("inconclusive", "worker-lost", why), tried[-1:])

    async def _submit(self, job: Job, address: str) -> WireResult | None:
        """Run on ``address``; None when the worker was lost meanwhile."""
        repo = job.sandbox.repository
        step = job.context.get("setup") if job.provider.capability == "setup" else None
        services = tuple(self._plan.services[n] for n in job.services if n in self._plan.services)
        others = dict.fromkeys(s.repository for s in services if s.repository not in (None, repo))
        wire = WireJob(
            job=job,
            session=self._session,
            token=secrets.token_hex(8),
            setup=self._setup_of(repo),
            services=services,
            service_repos=tuple(
                WireRepo(name, self._trees[name], self._setup_of(name))
                for name in others
                if name is not None
            ),
            setup_step=step if isinstance(step, int) else None,
            sandbox_aliases=self._aliases(job.sandbox.path),
        )
        trees = {r.tree: r.name for r in (wire.own(), *wire.service_repos)}
        self._book.busy[address] = self._book.busy.get(address, 0) + 1
        try:
            for _ in range(2):
                ship = [t for t in trees if (address, t) not in self._shipped]
                contents = {t: await self._archive(trees[t], t) for t in ship}
                # a fresh key each time: Dask answers a key it still holds with that
                # key's old result (this worker's "need") instead of running it again
                again = replace(wire, contents=contents, token=secrets.token_hex(8))
                answer = await self._await(again, address)
                if answer is None or not answer.need:
                    if answer is not None:
                        self._shipped.update((address, t) for t in trees)
                    return answer
                self._shipped.difference_update((address, t) for t in answer.need)
            raise RuntimeError(f"worker {address} kept asking for content trees {sorted(trees)}")
        finally:
            self._book.busy[address] -= 1

    def _aliases(self, path: str) -> tuple[str, ...]:
        """The sandbox path's other spelling here (links resolved), as configs written here hold."""
        real = str(Path(path).resolve())
        return (real,) if real != path else ()

    def _setup_of(self, repo: str) -> tuple[tuple[str, ...], ...]:
        repository = self._plan.repositories.get(repo)
        return tuple(tuple(a) for a in repository.setup) if repository else ()

    async def _await(self, wire: WireJob, address: str) -> WireResult | None:
        future = self._client.submit(
            worker.run_job,
            wire,
            key=f"changeloop-{wire.job.log_name}-{wire.token}",
            workers=[address],
            allow_other_workers=False,
            pure=False,
            retries=0,
        )
        try:
            while True:
                try:
                    await self._wait([future], WATCH_S)
                    break
                except TimeoutError:
                    if anyio.current_time() - self._refreshed > WATCH_S:  # one ask for all waiters
                        await self._refresh()
                    if address not in self._book.workers or address in self._book.lost:
                        self._book.lose(address, GONE)
                        with contextlib.suppress(Exception):
                            await future.cancel()
                        return None
            if future.status != "finished":
                await self._refresh()
                if address not in self._book.workers or future.status == "lost":
                    self._book.lose(address, GONE)
                    return None
            if future.status == "error":  # the runner itself raised: never a pass
                error = await future.exception()
                why = f"the job raised on worker {address}: {type(error).__name__}: {error}"
                return WireResult(address, failure=("inconclusive", "worker-error", why))
            answer: WireResult = await future
            return answer
        except _SchedulerLost:
            raise
        except BaseException:
            with anyio.CancelScope(shield=True), anyio.move_on_after(5):
                with contextlib.suppress(Exception):  # the worker may be gone
                    await self._client.run(worker.cancel, wire.token, workers=[address])
                await future.cancel()
            raise

    async def _wait(self, futures: list[Any], timeout: float, client: Any = None) -> None:
        """``distributed.wait`` through this run's client (TimeoutError when not all are done).

        ``distributed.wait`` asks the process's *default* client, which is another
        one (on another event loop) as soon as this process makes a second client.
        """
        client = client or self._client
        try:
            await client.sync(_wait, futures, timeout=timeout)
        except TimeoutError:
            self._check_scheduler(client)
            raise
        except Exception as exc:
            self._check_scheduler(client, exc)
            raise

    def _check_scheduler(self, client: Any, error: BaseException | None = None) -> None:
        """Raise _SchedulerLost once the client is no longer connected to its scheduler."""
        connected = client is not None and client.status == "running"
        if self.lost is None and connected and not isinstance(error, OSError):
            return
        if self.lost is None:
            said = str(error).strip().splitlines()[:1] if error is not None else []
            detail = f" ({said[0][:200]})" if said else " (its connection closed)"
            self.lost = Problem(
                code="dask_scheduler_lost",
                message=f"lost the Dask scheduler at {self._address} during the run{detail}; "
                "jobs it had not finished are not counted (no receipt of theirs is a pass)",
                fix="restart the scheduler and its workers (docs/scale-out.md), then prove again",
            )
        raise _SchedulerLost(self.lost.message)

    async def _refresh(self) -> None:
        """Workers that joined or left (one small ask), and now and then who fell silent."""
        self._refreshed = now = anyio.current_time()
        if self.lost is not None:
            raise _SchedulerLost(self.lost.message)
        try:
            with anyio.fail_after(CONNECT_TIMEOUT_S * 2):
                threads: Mapping[str, int] = await self._client.scheduler.ncores()
                joined = [
                    a for a in threads if a not in self._book.workers.keys() | self._book.lost
                ]
                # heartbeats (and a new worker's resources): the scheduler's fuller answer,
                # asked a few times per --dask-worker-timeout rather than on every refresh
                if joined or now - self._identified >= self._silence_s / SILENCE_CHECKS:
                    self._identified = now
                    info: Mapping[str, Any] = await self._client.scheduler.identity()
                    self._book.listen(info.get("workers") or {}, now)
        except (OSError, TimeoutError) as exc:
            self._check_scheduler(None, exc if isinstance(exc, OSError) else OSError(str(exc)))
            raise  # pragma: no cover - _check_scheduler raised
        joined = self._book.update(threads)
        if joined and self._warm_joiners:
            await self._warm(joined)

    async def _archive(self, repo: str, tree: str) -> bytes:
        if tree not in self._archives:
            make = partial(pack_repository, self._plan, repo, self._mode, self._state_dir)
            self._archives[tree] = await anyio.to_thread.run_sync(make)
        return self._archives[tree]

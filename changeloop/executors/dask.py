"""``DaskExecutor``: the coordinator's side of running jobs on a Dask cluster (DESIGN.md §10).

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
from changeloop.executors import content, worker
from changeloop.executors.dask_results import failed_result, job_result
from changeloop.executors.job import Job, JobResult
from changeloop.executors.shipping import executables, pack_repository, shipped_repositories
from changeloop.executors.wire import WireJob, WireRepo, WireResult
from changeloop.git.identity import content_identity
from changeloop.model import Plan, SandboxMode

CONNECT_TIMEOUT_S = 5
ASK_TIMEOUT_S = 60
WATCH_S = 0.5  # how often a waiting job checks that its worker is still there
# Jobs in flight per worker thread: one running and one waiting on the worker, so a worker
# starts its next job without waiting for the coordinator's round trip (receipts, next job).
QUEUED = 2
WARM_WAIT_S = 5  # at the end of a run: how long prepares still under way may take


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
    ) -> None:
        self._plan = plan
        self._cap = cap  # --jobs as given: at most this many jobs in flight on the cluster
        self._address = address
        self._mode = mode
        self._state_dir = state_dir
        self._session = secrets.token_hex(8)
        self._client: Any = None
        self._workers: dict[str, int] = {}  # address -> threads
        self._busy: dict[str, int] = {}
        self._uses: dict[str, int] = {}
        self._resources: dict[str, frozenset[str]] = {}  # worker -> its Dask resource names
        self._refreshed = float("-inf")
        self._lost: set[str] = set()
        self._shipped: set[tuple[str, str]] = set()  # (worker, tree)
        self._archives: dict[str, bytes] = {}  # tree -> content archive
        self._placed: dict[str, str] = {}  # provider -> worker that ran it
        self._trees: dict[str, str] = {}  # repository -> its content tree, as shipped
        self._warming: list[tuple[str, Any]] = []  # (worker, prepare future): kept, so it runs
        self._warm_joiners = False  # after prewarm: a worker that joins is warmed too

    # -- before the run ----------------------------------------------------------
    async def identify(self) -> None:
        """The content tree of every repository a job needs; a submodule refuses the run.

        A submodule is a commit id in the content tree: its files are not part of
        the tree a worker can check, so they cannot travel by tree id (exit 2).
        """
        found: list[str] = []
        for repo in shipped_repositories(self._plan):
            path = self._plan.repositories[repo].path
            ident = await anyio.to_thread.run_sync(
                partial(content_identity, path, include_untracked=self._mode != "worktree")
            )
            self._trees[repo] = ident.tree
            links = await anyio.to_thread.run_sync(content.submodules, path, ident.tree)
            found.extend(
                f"{repo}: {link}" if len(self._plan.repositories) > 1 else link for link in links
            )
        if found:
            raise ChangeloopError(
                Problem(
                    code="dask_submodule_unsupported",
                    message="--executor dask ships a repository's content by its git tree, "
                    "and a submodule is only a commit id in that tree; these submodules "
                    f"cannot be shipped: {', '.join(found)}",
                    fix="prove this change with --executor local (or vendor the submodule's "
                    "files into the repository)",
                )
            )

    async def prewarm(self) -> None:
        """Every worker makes this run's sandboxes now, before the first job needs them.

        Fire and forget: a job that reaches a worker first still asks for the
        content it lacks; a failure found here (content-mismatch) is the job's.
        A worker that joins later is asked when the coordinator first sees it.
        """
        self._warm_joiners = True
        await self._warm(sorted(self._workers))

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
        try:
            with anyio.fail_after(CONNECT_TIMEOUT_S + 2):
                self._client = await Client(  # type: ignore[no-untyped-call]
                    self._address, asynchronous=True, timeout=CONNECT_TIMEOUT_S
                )
            await self._refresh()
        except (OSError, TimeoutError, ValueError) as exc:
            await self.close()
            raise ChangeloopError(
                Problem(
                    code="dask_unreachable",
                    message=f"cannot reach the Dask scheduler at {self._address}: {exc}",
                    fix="start one (dask scheduler) and workers, or check --dask-scheduler / "
                    "CHANGELOOP_DASK_SCHEDULER",
                )
            ) from exc
        if not self._workers:
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
        """Jobs in flight on the cluster: two per worker thread, capped by ``--jobs`` when given.

        The second waits on its worker (pinned there), so the worker never idles
        while the coordinator seals the last receipt and builds the next job.
        """
        threads = max(1, sum(self._workers.values())) * QUEUED
        return min(threads, self._cap) if self._cap is not None else threads

    async def close(self) -> None:
        warming, self._warming = self._warming, []
        client, self._client = self._client, None
        if client is None:
            return
        with anyio.CancelScope(shield=True), anyio.move_on_after(10):
            alive = [f for address, f in warming if address in self._workers]
            with contextlib.suppress(Exception):  # prepares still under way finish first
                await self._wait(alive, WARM_WAIT_S, client)
            with contextlib.suppress(Exception):  # a gone worker has nothing to clean
                await client.run(worker.cleanup, self._session)
            await client.close()

    async def check_environment(self) -> None:
        """Every worker must resolve each executable the plan runs to the same bytes.

        One question to every worker for all of the plan's executables at once.
        """
        argv0s = sorted(executables(self._plan))
        if not argv0s:
            return
        try:
            with anyio.fail_after(ASK_TIMEOUT_S):
                answers: dict[str, dict[str, str]] = await self._client.run(
                    worker.executable_identities, argv0s
                )
        except TimeoutError as exc:
            raise ChangeloopError(
                Problem(
                    code="dask_unreachable",
                    message=f"the workers did not answer within {ASK_TIMEOUT_S} s "
                    f"(asked which {', '.join(map(repr, argv0s))} they run)",
                    fix="check the cluster's workers (dask worker logs)",
                )
            ) from exc
        for argv0 in argv0s:
            seen = {w: parts.get(argv0, "") for w, parts in answers.items()}
            if len(set(seen.values())) > 1:
                detail = ", ".join(f"{w}: {d}" for w, d in sorted(seen.items()))
                raise ChangeloopError(
                    Problem(
                        code="environment-mismatch",
                        message=f"the workers disagree on executable {argv0!r} ({detail})",
                        fix="install the same tools on every worker (or restrict the "
                        "cluster to identical workers)",
                    )
                )

    # -- Executor ----------------------------------------------------------------
    async def run(self, job: Job) -> JobResult:
        started = datetime.now(UTC)
        tried: list[str] = []
        for _attempt in range(2):
            if anyio.current_time() - self._refreshed > WATCH_S or tried:
                await self._refresh()  # workers that joined or left since
            address = self._choose(job, tried)
            if address is None:
                break
            tried.append(address)
            answer = await self._submit(job, address)
            if answer is not None:
                self._placed[job.provider.name] = address
                # unpacking and reading files: off the event loop, which seals receipts
                return await anyio.to_thread.run_sync(job_result, job, answer, started)
        where = ", ".join(tried) or "none left"
        why = f"the worker running it was lost ({where}); retried once, never counted a pass"
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
        )
        trees = {r.tree: r.name for r in (wire.own(), *wire.service_repos)}
        self._busy[address] = self._busy.get(address, 0) + 1
        try:
            for _ in range(2):
                ship = [t for t in trees if (address, t) not in self._shipped]
                contents = {t: await self._archive(trees[t], t) for t in ship}
                answer = await self._await(replace(wire, contents=contents), address)
                if answer is None or not answer.need:
                    if answer is not None:
                        self._shipped.update((address, t) for t in trees)
                    return answer
                self._shipped.difference_update((address, t) for t in answer.need)
            raise RuntimeError(f"worker {address} kept asking for content trees {sorted(trees)}")
        finally:
            self._busy[address] -= 1

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
                    if address not in self._workers:
                        self._lost.add(address)
                        await future.cancel()
                        return None
            if future.status != "finished":
                await self._refresh()
                if address not in self._workers or future.status == "lost":
                    self._lost.add(address)
                    return None
            if future.status == "error":  # the runner itself raised: never a pass
                error = await future.exception()
                why = f"the job raised on worker {address}: {type(error).__name__}: {error}"
                return WireResult(address, failure=("inconclusive", "worker-error", why))
            answer: WireResult = await future
            return answer
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
        await (client or self._client).sync(_wait, futures, timeout=timeout)

    async def _refresh(self) -> None:
        self._refreshed = anyio.current_time()
        threads: Mapping[str, int] = await self._client.scheduler.ncores()
        joined = sorted(a for a in threads if a not in self._workers and a not in self._lost)
        self._workers = {a: int(n) for a, n in threads.items() if a not in self._lost}
        if joined and self._warm_joiners:
            await self._warm(joined)
        if any(a not in self._resources for a in self._workers):  # a worker joined: its labels
            info = await self._client.scheduler.identity()
            for address, detail in info.get("workers", {}).items():
                self._resources[address] = frozenset((detail.get("resources") or {}).keys())

    def _choose(self, job: Job, tried: list[str]) -> str | None:
        alive = [a for a in sorted(self._workers) if a not in self._lost and a not in tried]
        # a resource some worker advertises (dask worker --resources GPU=1) is a place too
        labels = frozenset().union(*self._resources.values()) if self._resources else frozenset()
        wanted = [r for r in job.provider.resources if r in labels]
        alive = [a for a in alive if all(r in self._resources.get(a, ()) for r in wanted)]
        if not alive:
            return None
        pinned = [*job.provider.depends_on]
        if job.provider.capability == "setup":  # a repository's setup commands: one worker
            pinned.append(job.provider.name)
        for dep in pinned:  # where its dependencies generated their output
            if self._placed.get(dep) in alive:
                return self._placed[dep]
        # least busy; among equals the least used, so the cluster's workers take turns
        chosen = min(
            alive,
            key=lambda a: (
                self._busy.get(a, 0) / max(1, self._workers[a]),
                self._uses.get(a, 0),
                a,
            ),
        )
        self._uses[chosen] = self._uses.get(chosen, 0) + 1
        return chosen

    async def _archive(self, repo: str, tree: str) -> bytes:
        if tree not in self._archives:
            make = partial(pack_repository, self._plan, repo, self._mode, self._state_dir)
            self._archives[tree] = await anyio.to_thread.run_sync(make)
        return self._archives[tree]

"""The DAG scheduler: dependencies, resources, slots, longest critical path first.

    results = await schedule(jobs, run, slots=4, fail_fast=False, on_event=view.update)

``run(job)`` returns True for success. A failed job's dependents are skipped
("dependency 'x' failed", then "dependency 'y' was skipped" further down);
independent jobs go on unless ``fail_fast``, which starts nothing new after
the first failure ("not started: --fail-fast after 'x' failed"). An exception
from ``run`` is a failure whose reason names it; cancellation propagates.

Among ready jobs the one with the longest remaining critical path starts
first: a job's weight is its ``estimate_s`` (from an earlier run; jobs without
one get the median of the known estimates, or 1.0 when none is known), and
ties go to the job with more transitive dependents, then to listing order.

A job that has a slot but not its resources is parked on the first refused
lock and woken when that lock is released, so the cost per event is a few
heap operations, never a rescan of all jobs.
Shared and exclusive claims are told apart by their mode alone. An
exclusive waiter holds back new readers only of the lock it is parked on:
once woken for it and blocked elsewhere it lets go, so waiters never hold
back each other's readers in a cycle while nothing runs.

With ``host_wide=True`` (a ``prove``), a job's named resources other than the
workspace ones are also held across processes (``hostlocks``): once its slot
and its run's own locks are granted, it takes their lock files, showing
``waiting`` with the resource's name while another process holds one, and
starts only then.
"""

from __future__ import annotations

import heapq
import statistics
import time
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Literal

import anyio
import anyio.abc

from changeloop.scheduling import hostlocks
from changeloop.scheduling.graph import topological_order
from changeloop.scheduling.resources import Claim, ResourceTable, host_wide_names, parse_resources

TaskState = Literal["ok", "failed", "skipped"]
EventKind = Literal["queued", "waiting", "started", "finished", "skipped"]


@dataclass(frozen=True)
class Task:
    name: str
    depends_on: tuple[str, ...] = ()
    resources: tuple[str, ...] = ()
    estimate_s: float | None = None


@dataclass(frozen=True)
class TaskResult:
    name: str
    state: TaskState
    reason: str | None
    started: float | None  # time.time() seconds
    finished: float | None


@dataclass(frozen=True)
class TaskEvent:
    """For the live view. ``detail``: the resource waited for, "ok"/"failed", or the skip reason."""

    task: str
    kind: EventKind
    detail: str | None = None
    at: float = 0.0


def priorities(jobs: Sequence[Task]) -> list[tuple[float, int, int]]:
    """Heap keys per job (smaller starts first): (-critical path, -transitive dependents, index).

    Raises ValueError on duplicate names, unknown dependencies or cycles
    (preflight refuses those with a proper message before we get here).
    """
    index = {job.name: i for i, job in enumerate(jobs)}
    if len(index) != len(jobs):
        raise ValueError("duplicate job names")
    known = [j.estimate_s for j in jobs if j.estimate_s is not None]
    fallback = statistics.median(known) if known else 1.0
    dependents: list[list[int]] = [[] for _ in jobs]
    for i, job in enumerate(jobs):
        for dep in set(job.depends_on):
            if dep not in index:
                raise ValueError(f"{job.name!r} depends on unknown job {dep!r}")
            dependents[index[dep]].append(i)
    # One graph module: the scheduler walks graph.py's order and raises its CycleError.
    edges = {job.name: job.depends_on for job in jobs}
    order = [index[name] for name in topological_order(edges)]
    path = [0.0] * len(jobs)
    below = [0] * len(jobs)  # bitset of transitive dependents
    for i in reversed(order):
        weight = jobs[i].estimate_s
        path[i] = (fallback if weight is None else weight) + max(
            (path[d] for d in dependents[i]), default=0.0
        )
        bits = 0
        for d in dependents[i]:
            bits |= below[d] | (1 << d)
        below[i] = bits
    return [(-path[i], -below[i].bit_count(), i) for i in range(len(jobs))]


class _Run:
    """State of one schedule() call; every method runs without awaiting."""

    def __init__(
        self,
        jobs: Sequence[Task],
        run: Callable[[Task], Awaitable[bool]],
        slots: int,
        fail_fast: bool,
        on_event: Callable[[TaskEvent], None] | None,
        *,
        host_wide: bool = False,
    ) -> None:
        self.jobs = jobs
        self.run = run
        self.free = max(1, slots)
        self.fail_fast = fail_fast
        self.on_event = on_event
        self.keys = priorities(jobs)
        self.claims = [parse_resources(j.resources) for j in jobs]
        # What each job holds across processes too (none unless host-wide: the tests'
        # thousands of plans never touch a lock file)
        self.host = [
            host_wide_names(c, j.resources) if host_wide else ()
            for c, j in zip(self.claims, jobs, strict=True)
        ]
        index = {job.name: i for i, job in enumerate(jobs)}
        self.dependents: list[list[int]] = [[] for _ in jobs]
        self.missing = [0] * len(jobs)
        for i, job in enumerate(jobs):
            for dep in set(job.depends_on):
                self.dependents[index[dep]].append(i)
                self.missing[i] += 1
        self.table = ResourceTable()
        self.ready: list[tuple[float, int, int]] = []
        # Parked jobs per (lock key, "read" | "exclusive").
        self.parked: dict[tuple[str, str], list[tuple[float, int, int]]] = {}
        self.woken_from: dict[int, str] = {}
        self.waiting_writer: dict[int, set[str]] = {}
        self.last_wait: dict[int, str] = {}
        self.started: dict[int, float] = {}
        self.results: dict[str, TaskResult] = {}
        self.stopped = False
        self.tg: anyio.abc.TaskGroup | None = None
        # Started jobs not yet taken by a worker, and the workers between two jobs: a
        # worker runs started jobs one after another, so a run has at most ``slots``
        # tasks instead of one per job (each task is work for the loop).
        self.queue: deque[int] = deque()
        self.between = 0

    def emit(self, i: int, kind: EventKind, detail: str | None = None) -> None:
        if self.on_event is not None:
            self.on_event(TaskEvent(self.jobs[i].name, kind, detail, time.time()))

    # -- starting ---------------------------------------------------------------
    def dispatch(self) -> None:
        """Start ready jobs while slots are free; park those whose locks are taken."""
        while self.free and self.ready and not self.stopped:
            key = heapq.heappop(self.ready)
            i = key[2]
            claim = self.table.blocker(self.claims[i])
            if claim is None:
                self.start(i)
            else:
                self.park(key, claim)

    def start(self, i: int) -> None:
        assert self.tg is not None
        claims = self.claims[i]
        self.table.acquire(claims)
        for repo in self.waiting_writer.pop(i, ()):
            self.table.writer_done_waiting(repo)
        self.woken_from.pop(i, None)
        self.free -= 1
        self.started[i] = time.time()
        if not self.host[i]:  # else once its host-wide locks are taken (execute)
            self.emit(i, "started")
        self.queue.append(i)
        if len(self.queue) > self.between:  # every worker is busy with a job: one more
            self.between += 1
            self.tg.start_soon(self.worker)

    def park(self, key: tuple[float, int, int], claim: Claim) -> None:
        i = key[2]
        side = "read" if claim.mode == "read" else "exclusive"
        if side == "exclusive":
            mine = self.waiting_writer.setdefault(i, set())
            if claim.key not in mine:
                mine.add(claim.key)
                self.table.writer_waits(claim.key)
        heapq.heappush(self.parked.setdefault((claim.key, side), []), key)
        if self.last_wait.get(i) != claim.name:
            self.last_wait[i] = claim.name
            why = claim.name
            if side == "read" and not self.table.held_exclusively(claim.key):
                why += " (a writer is waiting)"
            self.emit(i, "waiting", why)
        source = self.woken_from.pop(i, None)
        if source is not None and source != claim.key:
            # Woken for `source` but blocked elsewhere: it no longer waits for `source`, so
            # it must not hold new readers of it back (two such jobs, each holding back
            # the other's readers, would wait forever with nothing running), and the
            # wake-up passes on.
            if source in self.waiting_writer.get(i, ()):
                self.waiting_writer[i].discard(source)
                self.table.writer_done_waiting(source)
            self.wake(source)

    def wake(self, key: str) -> None:
        """Move the jobs that may now take ``key`` back to the ready heap.

        Only the modes of the parked claims decide: one exclusive
        waiter (a writer or a mutex holder) once no reader holds the lock,
        otherwise every parked reader, unless an exclusive waiter is queued.
        A lock may have readers and exclusive holders of either kind: a
        service's users share ``port:<n>`` that a provider naming it takes alone.
        """
        if self.table.held_exclusively(key):
            return
        if self.table.readers(key) == 0 and self._wake_one((key, "exclusive"), key):
            return
        if not self.table.writers_waiting(key):
            readers = self.parked.pop((key, "read"), [])
            for item in readers:
                self.woken_from[item[2]] = key
                heapq.heappush(self.ready, item)

    def _wake_one(self, slot: tuple[str, str], key: str) -> bool:
        heap = self.parked.get(slot)
        if not heap:
            return False
        item = heapq.heappop(heap)
        self.woken_from[item[2]] = key
        heapq.heappush(self.ready, item)
        return True

    # -- finishing --------------------------------------------------------------
    async def worker(self) -> None:
        """Run started jobs until none waits for a worker (counted in ``between`` meanwhile)."""
        while self.queue:
            i = self.queue.popleft()
            self.between -= 1
            await self.execute(i)
        self.between -= 1

    async def execute(self, i: int) -> None:
        job = self.jobs[i]
        reason: str | None = None
        # A bug in run() ends the run (the CLI's boundary: exit 3), never one job's result.
        if self.host[i]:
            ok = await self.execute_held(i)
        else:
            ok = bool(await self.run(job))
        self.between += 1  # this worker takes the next job that finish() starts
        self.finish(i, ok, reason)

    async def execute_held(self, i: int) -> bool:
        """Run job ``i`` holding its host-wide locks; ``started`` once they are taken."""
        waited: list[str] = []

        def waiting(name: str) -> None:
            waited.append(name)
            self.emit(i, "waiting", name)

        async with hostlocks.hold(self.host[i], on_wait=waiting):
            if waited:
                self.started[i] = time.time()
            self.emit(i, "started")
            return bool(await self.run(self.jobs[i]))

    def finish(self, i: int, ok: bool, reason: str | None) -> None:
        name = self.jobs[i].name
        self.results[name] = TaskResult(
            name, "ok" if ok else "failed", reason, self.started[i], time.time()
        )
        self.emit(i, "finished", "ok" if ok else "failed")
        self.free += 1
        claims = self.claims[i]
        self.table.release(claims)
        for claim in claims:
            self.wake(claim.key)
        if ok:
            for d in self.dependents[i]:
                self.missing[d] -= 1
                if self.missing[d] == 0 and self.jobs[d].name not in self.results:
                    heapq.heappush(self.ready, self.keys[d])
        else:
            self.skip_dependents(i, f"dependency {name!r} failed")
            if self.fail_fast and not self.stopped:
                self.stop(f"not started: --fail-fast after {name!r} failed")
        self.dispatch()

    def skip(self, i: int, reason: str) -> None:
        name = self.jobs[i].name
        self.results[name] = TaskResult(name, "skipped", reason, None, None)
        self.emit(i, "skipped", reason)

    def skip_dependents(self, i: int, reason: str) -> None:
        todo = [(d, reason) for d in self.dependents[i]]
        while todo:
            d, why = todo.pop()
            if self.jobs[d].name in self.results:
                continue
            self.skip(d, why)
            why = f"dependency {self.jobs[d].name!r} was skipped"
            todo.extend((e, why) for e in self.dependents[d])

    def stop(self, reason: str) -> None:
        self.stopped = True
        self.ready.clear()
        self.parked.clear()
        for i, job in enumerate(self.jobs):
            if job.name not in self.results and i not in self.started:
                self.skip(i, reason)


async def schedule(
    jobs: Sequence[Task],
    run: Callable[[Task], Awaitable[bool]],
    *,
    slots: int,
    fail_fast: bool = False,
    on_event: Callable[[TaskEvent], None] | None = None,
    host_wide: bool = False,
) -> dict[str, TaskResult]:
    """Run ``jobs`` (see module doc); returns one result per job, in listing order."""
    state = _Run(jobs, run, slots, fail_fast, on_event, host_wide=host_wide)
    for i in range(len(jobs)):
        state.emit(i, "queued")
    async with anyio.create_task_group() as tg:
        state.tg = tg
        state.ready = [state.keys[i] for i in range(len(jobs)) if state.missing[i] == 0]
        heapq.heapify(state.ready)
        state.dispatch()
    lost = [job.name for job in jobs if job.name not in state.results]
    if lost:  # every job ends in a result; anything else is a bug in this module
        raise RuntimeError(f"scheduler ended without running {', '.join(lost)}")
    return {job.name: state.results[job.name] for job in jobs}

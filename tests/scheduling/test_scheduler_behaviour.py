"""Deterministic scheduler behaviour: priority, failure handling, writer preference."""

from __future__ import annotations

import anyio
import pytest

from changeloop.scheduling.scheduler import Task, TaskEvent, TaskResult, priorities, schedule


def run_all(
    jobs: list[Task],
    *,
    slots: int,
    fail: tuple[str, ...] = (),
    fail_fast: bool = False,
) -> tuple[dict[str, TaskResult], list[str], list[TaskEvent]]:
    order: list[str] = []
    events: list[TaskEvent] = []

    async def run(job: Task) -> bool:
        order.append(job.name)
        await anyio.sleep(0)
        return job.name not in fail

    async def main() -> dict[str, TaskResult]:
        return await schedule(jobs, run, slots=slots, fail_fast=fail_fast, on_event=events.append)

    return anyio.run(main), order, events


def test_longest_remaining_critical_path_starts_first() -> None:
    # Listed first but short: the 8-sleeps-plus-chain graph of bench/scheduler.py.
    jobs = [Task(f"s{i}", estimate_s=0.25) for i in range(8)]
    jobs += [Task("c0", estimate_s=0.5)]
    jobs += [Task(f"c{i}", depends_on=(f"c{i - 1}",), estimate_s=0.5) for i in range(1, 4)]
    _, order, _ = run_all(jobs, slots=1)
    assert order[0] == "c0"


def test_without_estimates_more_dependents_first() -> None:
    jobs = [Task("leaf1"), Task("leaf2"), Task("hub"), Task("x", ("hub",)), Task("y", ("hub",))]
    _, order, _ = run_all(jobs, slots=1)
    assert order[0] == "hub"
    keys = priorities(jobs)
    assert keys[2] < keys[0] and keys[0] < keys[1]  # ties keep listing order


def test_failure_skips_dependents_with_reasons_and_independents_continue() -> None:
    jobs = [Task("a"), Task("b", ("a",)), Task("c", ("b",)), Task("d"), Task("e", ("d",))]
    results, order, events = run_all(jobs, slots=1, fail=("a",))
    assert results["a"].state == "failed"
    assert results["b"] == TaskResult("b", "skipped", "dependency 'a' failed", None, None)
    assert results["c"].reason == "dependency 'b' was skipped"
    assert results["d"].state == results["e"].state == "ok"
    assert "b" not in order and "c" not in order
    assert any(
        e.task == "c" and e.kind == "skipped" and e.detail == "dependency 'b' was skipped"
        for e in events
    )


def test_fail_fast_starts_nothing_new() -> None:
    jobs = [
        Task("a", estimate_s=9),
        Task("b", estimate_s=1),
        Task("c", estimate_s=1),
        Task("d", ("a",)),
    ]
    results, order, _ = run_all(jobs, slots=1, fail=("a",), fail_fast=True)
    assert order == ["a"]
    assert results["d"].reason == "dependency 'a' failed"
    assert results["b"].reason == results["c"].reason == "not started: --fail-fast after 'a' failed"


def test_fail_fast_lets_running_jobs_finish() -> None:
    gate = anyio.Event()

    async def run(job: Task) -> bool:
        if job.name == "slow":
            await gate.wait()
            return True
        gate.set()
        return False

    async def main() -> dict[str, TaskResult]:
        jobs = [Task("slow", estimate_s=5), Task("bad", estimate_s=4), Task("later", estimate_s=1)]
        return await schedule(jobs, run, slots=2, fail_fast=True)

    results = anyio.run(main)
    assert results["slow"].state == "ok"
    assert results["bad"].state == "failed"
    assert results["later"].reason == "not started: --fail-fast after 'bad' failed"


def test_an_exception_in_run_ends_the_run_instead_of_failing_a_job() -> None:
    """A bug is never one job's result: it reaches the CLI's boundary (exit 3)."""
    started: list[str] = []

    async def run(job: Task) -> bool:
        started.append(job.name)
        raise ValueError("adapter bug")

    with pytest.raises(BaseExceptionGroup) as caught:
        anyio.run(lambda: schedule([Task("a"), Task("b", ("a",))], run, slots=2))
    leaves = caught.value.exceptions
    assert [type(e) for e in leaves] == [ValueError] and str(leaves[0]) == "adapter bug"
    assert started == ["a"]


def test_cancellation_propagates_and_stops_other_jobs() -> None:
    finished: list[str] = []

    async def main() -> bool:
        with anyio.CancelScope() as scope:

            async def run(job: Task) -> bool:
                if job.name == "trigger":
                    scope.cancel()
                else:
                    await anyio.sleep_forever()
                finished.append(job.name)
                return True

            await schedule([Task("other", estimate_s=2), Task("trigger")], run, slots=2)
            return False
        return scope.cancelled_caught

    assert anyio.run(main) is True
    assert "other" not in finished


def test_waiting_writer_is_not_starved_by_new_readers() -> None:
    events: list[TaskEvent] = []
    starts: list[str] = []
    readers_parked = anyio.Event()
    late = {f"r{i}" for i in range(1, 5)}

    def on_event(event: TaskEvent) -> None:
        events.append(event)
        parked = {e.task for e in events if e.kind in ("waiting", "started")}
        if late <= parked:  # all refused (or, were the lock unfair, all started)
            readers_parked.set()

    async def run(job: Task) -> bool:
        starts.append(job.name)
        if job.name == "r0":
            await readers_parked.wait()  # hold the read lock until the late readers are refused
        return True

    jobs = [
        Task("gate", estimate_s=100),
        Task("r0", resources=("workspace-read:a",), estimate_s=50),
        Task("w", resources=("workspace-write:a",), estimate_s=1),
        *(Task(r, ("gate",), ("workspace-read:a",), estimate_s=60) for r in sorted(late)),
    ]

    async def main() -> dict[str, TaskResult]:
        return await schedule(jobs, run, slots=3, on_event=on_event)

    results = anyio.run(main)
    assert all(r.state == "ok" for r in results.values())
    assert all(starts.index("w") < starts.index(r) for r in late)
    waits = {e.task: e.detail for e in events if e.kind == "waiting"}
    assert waits["w"] == "workspace-write:a"
    assert waits["r1"] == "workspace-read:a (a writer is waiting)"


def test_readers_share_and_mutex_serialises() -> None:
    active: dict[str, int] = {"read": 0, "lock": 0}
    peak: dict[str, int] = {"read": 0, "lock": 0}

    async def run(job: Task) -> bool:
        kind = "read" if job.name.startswith("r") else "lock"
        active[kind] += 1
        peak[kind] = max(peak[kind], active[kind])
        await anyio.sleep(0.001)
        active[kind] -= 1
        return True

    jobs = [Task(f"r{i}", resources=("workspace-read:a",)) for i in range(4)]
    jobs += [Task(f"m{i}", resources=("port:3000",)) for i in range(4)]
    anyio.run(lambda: schedule(jobs, run, slots=8))
    assert peak == {"read": 4, "lock": 1}


@pytest.mark.parametrize(
    ("jobs", "message"),
    [
        ([Task("a"), Task("a")], "duplicate"),
        ([Task("a", ("zzz",))], "unknown job 'zzz'"),
        ([Task("a", ("b",)), Task("b", ("a",))], "cycle"),
    ],
)
def test_bad_graphs_are_refused(jobs: list[Task], message: str) -> None:
    async def run(_job: Task) -> bool:
        return True

    with pytest.raises(ValueError, match=message):
        anyio.run(lambda: schedule(jobs, run, slots=1))

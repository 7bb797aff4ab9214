"""Workers instead of a task per job: at most ``slots`` tasks, and no started job waits.

The scheduler runs started jobs on worker tasks that take the next started job
when theirs is done.
A worker busy with a long job must never hold back a job that has a free slot.
"""

from __future__ import annotations

import asyncio

import anyio

from changeloop.scheduling.scheduler import Task, TaskResult, schedule


def test_a_thousand_jobs_run_on_at_most_slots_tasks() -> None:
    tasks: set[int] = set()
    running = peak = 0

    async def run(_job: Task) -> bool:
        nonlocal running, peak
        tasks.add(id(asyncio.current_task()))
        running += 1
        peak = max(peak, running)
        await anyio.sleep(0)
        running -= 1
        return True

    jobs = [Task(f"j{i}") for i in range(1000)]
    results = anyio.run(lambda: schedule(jobs, run, slots=2))
    assert [r.state for r in results.values()] == ["ok"] * 1000
    assert peak == 2  # both slots used
    assert len(tasks) <= 2


def test_jobs_started_by_a_finish_run_beside_a_long_job() -> None:
    # slots=3: "long" runs until "c" and "d" run at the same time; they become ready
    # only when "b" finishes, so b's worker takes one and a new worker the other.
    together = anyio.Event()
    inside: set[str] = set()

    async def run(job: Task) -> bool:
        if job.name == "b":
            return True
        if job.name != "long":
            inside.add(job.name)
            if {"c", "d"} <= inside:
                together.set()
        await together.wait()
        return True

    jobs = [
        Task("long", estimate_s=9.0),
        Task("b", estimate_s=0.0),
        Task("c", depends_on=("b",)),
        Task("d", depends_on=("b",)),
    ]

    async def main() -> dict[str, TaskResult]:
        with anyio.fail_after(10):  # a job left waiting for a busy worker never ends
            return await schedule(jobs, run, slots=3)

    results = anyio.run(main)
    assert {n: r.state for n, r in results.items()} == dict.fromkeys(["long", "b", "c", "d"], "ok")


def test_a_failing_job_does_not_stop_its_worker() -> None:
    ran: list[str] = []

    async def run(job: Task) -> bool:
        ran.append(job.name)
        return job.name != "bad"

    jobs = [Task("bad", estimate_s=5.0), *(Task(f"j{i}") for i in range(5))]
    results = anyio.run(lambda: schedule(jobs, run, slots=1))
    assert results["bad"].state == "failed"
    assert sorted(ran) == sorted(j.name for j in jobs)

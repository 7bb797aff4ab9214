"""Property tests of the scheduler on random DAGs with random resources.

Intervals are recorded with a logical clock (one counter bumped at every start
and end inside run()), which is exact on a single event loop and needs no
wall-time assertions.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import anyio
from hypothesis import given, settings
from hypothesis import strategies as st

from changeloop.scheduling.resources import parse_resources
from changeloop.scheduling.scheduler import Task, TaskEvent, TaskResult, schedule

POOL = (
    "workspace-read:a",
    "workspace-write:a",
    "workspace-read:b",
    "workspace-write:b",
    "port:3000",
    "browser:a",
)


@dataclass(frozen=True)
class Spec:
    jobs: tuple[Task, ...]
    sleeps: tuple[float, ...]
    outcome: tuple[str, ...]  # "ok" | "fail" (a raising run ends the run: test_scheduler_behaviour)


@st.composite
def specs(draw: st.DrawFn) -> Spec:
    n = draw(st.integers(1, 14))
    jobs = []
    for i in range(n):
        deps = draw(st.sets(st.integers(0, i - 1), max_size=3)) if i else set()
        res = draw(st.lists(st.sampled_from(POOL), max_size=3))
        est = draw(st.one_of(st.none(), st.floats(0.0, 10.0)))
        jobs.append(Task(f"j{i}", tuple(f"j{d}" for d in sorted(deps)), tuple(res), est))
    sleeps = tuple(draw(st.sampled_from((0.0, 0.0005, 0.001, 0.003))) for _ in range(n))
    outcome = tuple(draw(st.sampled_from(("ok", "ok", "ok", "ok", "fail"))) for _ in range(n))
    return Spec(tuple(jobs), sleeps, outcome)


def execute(
    spec: Spec, slots: int, fail_fast: bool
) -> tuple[dict[str, TaskResult], dict[str, tuple[int, int]], list[TaskEvent]]:
    clock = itertools.count()
    spans: dict[str, list[int]] = {}
    running = [0, 0]  # now, max
    events: list[TaskEvent] = []
    by_name = {job.name: i for i, job in enumerate(spec.jobs)}

    async def run(job: Task) -> bool:
        i = by_name[job.name]
        spans[job.name] = [next(clock)]
        running[0] += 1
        running[1] = max(running)
        await anyio.sleep(spec.sleeps[i])
        running[0] -= 1
        spans[job.name].append(next(clock))
        return spec.outcome[i] == "ok"

    async def main() -> dict[str, TaskResult]:
        return await schedule(
            spec.jobs, run, slots=slots, fail_fast=fail_fast, on_event=events.append
        )

    results = anyio.run(main)
    assert running[1] <= slots
    return results, {k: (v[0], v[1]) for k, v in spans.items()}, events


def overlap(a: tuple[int, int], b: tuple[int, int]) -> bool:
    return a[0] < b[1] and b[0] < a[1]


@settings(max_examples=150, deadline=None)
@given(spec=specs(), slots=st.integers(1, 4), fail_fast=st.booleans())
def test_random_dags_respect_resources_dependencies_and_report_everything(
    spec: Spec, slots: int, fail_fast: bool
) -> None:
    results, spans, events = execute(spec, slots, fail_fast)
    jobs = {job.name: job for job in spec.jobs}
    assert list(results) == list(jobs)

    # Exclusive holders never overlap; a writer never overlaps a reader of its repository.
    ran = sorted(spans)
    for a, b in itertools.combinations(ran, 2):
        if not overlap(spans[a], spans[b]):
            continue
        ca = {c.key: c.mode for c in parse_resources(jobs[a].resources)}
        cb = {c.key: c.mode for c in parse_resources(jobs[b].resources)}
        for key in ca.keys() & cb.keys():
            assert ca[key] == cb[key] == "read", f"{a} and {b} overlap on {key}"

    for name, job in jobs.items():
        result = results[name]
        if name in spans:
            # Ran: every dependency finished ok before it started.
            assert result.state in ("ok", "failed")
            assert result.started is not None and result.finished is not None
            for dep in job.depends_on:
                assert results[dep].state == "ok"
                assert spans[dep][1] < spans[name][0]
            i = int(name[1:])
            assert (result.state == "ok") == (spec.outcome[i] == "ok")
        else:
            # Not run: skipped, with a reason that is true.
            assert result.state == "skipped" and result.reason
            assert result.started is None
            bad = [d for d in job.depends_on if results[d].state != "ok"]
            if result.reason.startswith("dependency "):
                named = result.reason.split("'")[1]
                assert named in bad
                word = "failed" if results[named].state == "failed" else "was skipped"
                assert result.reason == f"dependency {named!r} {word}"
            else:
                assert fail_fast
                assert result.reason.startswith("not started: --fail-fast after '")
                culprit = result.reason.split("'")[1]
                assert results[culprit].state == "failed"
    if not fail_fast:
        # Nothing is held back without a failed or skipped dependency.
        for name, job in jobs.items():
            if all(results[d].state == "ok" for d in job.depends_on):
                assert name in spans

    # Events: every job queued once; started/finished exactly for those that ran.
    kinds = {(e.task, e.kind) for e in events}
    for name in jobs:
        assert sum(1 for e in events if e.task == name and e.kind == "queued") == 1
        assert ((name, "started") in kinds) == (name in spans)
        assert ((name, "skipped") in kinds) == (results[name].state == "skipped")

"""Which Dask workers a run may use: alive, busy, silent, lost and why, where jobs went.

Pure bookkeeping for :class:`changeloop.executors.dask.DaskExecutor` (it asks
the scheduler; this decides). A worker is lost when it leaves the cluster or
falls silent: no heartbeat for ``silence_s`` seconds, measured by when the
scheduler's ``last_seen`` for it last moved, on this machine's clock (the
scheduler's clock may differ). A lost worker gets no job for the rest of the
run, and the reason is kept, to be named in ``worker-lost``.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from changeloop.executors.job import Job


@dataclass
class WorkerBook:
    silence_s: float = 30.0
    workers: dict[str, int] = field(default_factory=dict)  # address -> threads
    busy: dict[str, int] = field(default_factory=dict)
    uses: dict[str, int] = field(default_factory=dict)
    resources: dict[str, frozenset[str]] = field(default_factory=dict)  # its Dask resource names
    lost: set[str] = field(default_factory=set)
    why: dict[str, str] = field(default_factory=dict)  # lost worker -> why
    heard: dict[str, tuple[Any, float]] = field(default_factory=dict)  # (last_seen, when it moved)
    placed: dict[str, str] = field(default_factory=dict)  # provider -> worker that ran it

    def update(self, threads: Mapping[str, int]) -> list[str]:
        """The scheduler's workers now; those that joined since (lost ones stay out)."""
        joined = sorted(a for a in threads if a not in self.workers and a not in self.lost)
        self.workers = {a: int(n) for a, n in threads.items() if a not in self.lost}
        return joined

    def lose(self, address: str, why: str) -> None:
        """``address`` is lost for this run: no job goes there, its job is retried elsewhere."""
        if address in self.lost:
            return
        self.lost.add(address)
        self.why.setdefault(address, why)
        self.workers.pop(address, None)
        # said as it happens: a retry that then passes leaves no finding to name the worker
        print(f"note: Dask worker {address} {self.why[address]}", file=sys.stderr)

    def listen(self, workers: Mapping[str, Any], now: float) -> None:
        """Each worker's last heartbeat as the scheduler saw it: silent too long, it is lost.

        Measured by when ``last_seen`` last moved, on this clock: the scheduler's
        clock may differ from ours.
        """
        for address, detail in workers.items():
            seen = detail.get("last_seen")
            heard = self.heard.get(address)
            if heard is None or heard[0] != seen:
                self.heard[address] = (seen, now)
            elif now - heard[1] > self.silence_s:
                self.lose(address, f"stopped answering (no heartbeat for {self.silence_s:g} s)")
            if address not in self.resources:  # a worker joined: its labels
                self.resources[address] = frozenset((detail.get("resources") or {}).keys())

    def choose(self, job: Job, tried: list[str]) -> str | None:
        alive = [a for a in sorted(self.workers) if a not in self.lost and a not in tried]
        # a resource some worker advertises (dask worker --resources GPU=1) is a place too
        labels = frozenset().union(*self.resources.values()) if self.resources else frozenset()
        wanted = [r for r in job.provider.resources if r in labels]
        alive = [a for a in alive if all(r in self.resources.get(a, ()) for r in wanted)]
        if not alive:
            return None
        pinned = [*job.provider.depends_on]
        if job.provider.capability == "setup":  # a repository's setup commands: one worker
            pinned.append(job.provider.name)
        for dep in pinned:  # where its dependencies generated their output
            if self.placed.get(dep) in alive:
                return self.placed[dep]
        # least busy; among equals the least used, so the cluster's workers take turns
        chosen = min(
            alive,
            key=lambda a: (
                self.busy.get(a, 0) / max(1, self.workers[a]),
                self.uses.get(a, 0),
                a,
            ),
        )
        self.uses[chosen] = self.uses.get(chosen, 0) + 1
        return chosen

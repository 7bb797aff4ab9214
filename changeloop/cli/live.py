"""A live table of providers for terminals, redrawn a few times a second so time is seen passing.

Used only when stderr is a terminal; logs and CI get :class:`board.Progress`
lines (with a heartbeat) instead, which read well after the fact.

Each row: the provider, its state (queued, waiting on what, running, cached,
or what its receipts say: pass, fail, inconclusive, no receipt, skipped), its
clock (ticking while it runs), the time the last runs of it took (``~41s``,
from ``.changeloop/durations.json``), and — where the runner streams them into
its log — the tests counted so far. The title carries the run's total elapsed time.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType

from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.table import Table
from rich.text import Text

from changeloop.cli.board import FINISHED_WORD, clock
from changeloop.cli.live_counts import LogCounter
from changeloop.model import Plan
from changeloop.records import RunEvent

REFRESH_PER_SECOND = 4
_STYLE = {
    "queued": "dim",
    "waiting": "yellow",
    "running": "cyan",
    "cached": "green",
    "pass": "green",
    "fail": "red",
    "inconclusive": "yellow",
    "no receipt": "yellow",
    "skipped": "magenta",
}
_DONE = ("pass", "fail", "inconclusive", "no receipt", "skipped", "cached")


class LiveBoard:
    def __init__(
        self,
        plan: Plan,
        console: Console,
        *,
        estimates: Mapping[str, float] | None = None,
        refresh_per_second: float = REFRESH_PER_SECOND,
    ) -> None:
        self.console = console
        self.change = plan.change.id
        self.state = {name: "queued" for name in plan.providers}
        self.detail: dict[str, str] = {}
        self.began: dict[str, float] = {}
        self.took: dict[str, float] = {}
        self.estimates = dict(estimates or {})
        self.counters: dict[str, LogCounter] = {}
        self.start = time.monotonic()
        # get_renderable: every refresh draws anew, so running clocks tick between events
        self.live = Live(
            console=console,
            transient=False,
            refresh_per_second=refresh_per_second,
            get_renderable=self.render,
        )

    def __enter__(self) -> LiveBoard:
        self.live.__enter__()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.live.refresh()
        self.live.__exit__(kind, value, tb)

    def event(self, event: RunEvent) -> None:
        provider, kind, detail = event.provider, event.kind, event.detail
        if provider not in self.state:
            return
        now = time.monotonic()
        if kind == "started":
            self.state[provider] = "running"
            self.began[provider] = now
            self.detail.pop(provider, None)
            if detail:  # the log its command streams into
                self.counters[provider] = LogCounter(Path(detail))
        elif kind == "waiting":
            self.state[provider] = "waiting"
            self.detail[provider] = f"for {detail}"
        elif kind == "cached":
            self.state[provider] = "cached"
            self.detail[provider] = "reused a cached pass (same fingerprint)"
        elif kind == "finished":
            if self.state[provider] != "cached":
                self.state[provider] = FINISHED_WORD.get(detail or "ok", detail or "pass")
                self.took[provider] = now - self.began.get(provider, now)
            counter = self.counters.get(provider)
            if counter is not None:
                counter.poll()
        elif kind == "skipped":
            self.state[provider] = "skipped"
            self.detail[provider] = detail or ""
        self.live.refresh()

    def render(self) -> RenderableType:
        done = sum(1 for s in self.state.values() if s in _DONE)
        now = time.monotonic()
        title = (
            f"change {self.change}: providers {done}/{len(self.state)}, "
            f"{clock(now - self.start)} elapsed"
        )
        table = Table(title=title, title_justify="left")
        table.add_column("provider")
        table.add_column("state")
        table.add_column("time", justify="right")
        table.add_column("usually", justify="right")
        table.add_column("tests")
        table.add_column("detail", overflow="fold")
        for name, state in self.state.items():
            if name in self.took:
                took = clock(self.took[name])
            elif name in self.began:
                took = clock(now - self.began[name])
            else:
                took = ""
            estimate = self.estimates.get(name)
            usual = f"~{clock(estimate)}" if estimate and state != "cached" else ""
            counter = self.counters.get(name)
            if counter is not None and state == "running":
                counter.poll()
            tests = (counter.text() or "") if counter is not None else ""
            style = _STYLE.get(state, "")
            table.add_row(
                name, Text(state, style=style), took, usual, tests, self.detail.get(name, "")
            )
        return Group(table)

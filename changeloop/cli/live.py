"""A live table of providers for terminals: queued, waiting (on what), running, done.

Used only when stderr is a terminal; logs and CI get :class:`board.Progress`
lines instead, which read well after the fact.
"""

from __future__ import annotations

import time
from types import TracebackType

from rich.console import Console
from rich.live import Live
from rich.table import Table

from changeloop.model import Plan
from changeloop.records import RunEvent

_STYLE = {
    "queued": "dim",
    "waiting": "yellow",
    "running": "cyan",
    "cached": "green",
    "ok": "green",
    "failed": "red",
    "inconclusive": "yellow",
    "no receipt": "yellow",
    "skipped": "magenta",
}
_DONE = ("ok", "failed", "inconclusive", "no receipt", "skipped", "cached")


class LiveBoard:
    def __init__(self, plan: Plan, console: Console) -> None:
        self.console = console
        self.state = {name: "queued" for name in plan.providers}
        self.detail: dict[str, str] = {}
        self.began: dict[str, float] = {}
        self.took: dict[str, float] = {}
        self.live = Live(self.render(), console=console, transient=False, refresh_per_second=8)

    def __enter__(self) -> LiveBoard:
        self.live.__enter__()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.live.update(self.render())
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
        elif kind == "waiting":
            self.state[provider] = "waiting"
            self.detail[provider] = f"for {detail}"
        elif kind == "cached":
            self.state[provider] = "cached"
        elif kind == "finished":
            if self.state[provider] != "cached":
                self.state[provider] = detail or "ok"
            self.took[provider] = now - self.began.get(provider, now)
        elif kind == "skipped":
            self.state[provider] = "skipped"
            self.detail[provider] = detail or ""
        self.live.update(self.render())

    def render(self) -> Table:
        done = sum(1 for s in self.state.values() if s in _DONE)
        table = Table(title=f"providers {done}/{len(self.state)}", title_justify="left")
        table.add_column("provider")
        table.add_column("state")
        table.add_column("time", justify="right")
        table.add_column("detail", overflow="fold")
        now = time.monotonic()
        for name, state in self.state.items():
            if name in self.took:
                took = f"{self.took[name]:.1f}s"
            elif name in self.began:
                took = f"{now - self.began[name]:.1f}s"
            else:
                took = ""
            style = _STYLE.get(state, "")
            table.add_row(name, f"[{style}]{state}[/]", took, self.detail.get(name, ""))
        return table

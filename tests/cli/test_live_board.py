"""The live table follows scheduler events: queued → waiting (on what) → running → done."""

from __future__ import annotations

import io
from pathlib import Path

from rich.console import Console

from changeloop.cli.live import LiveBoard
from changeloop.model import Evidence, Plan, Provider
from changeloop.records import RunEvent
from changeloop.workspace.changeref import ChangeRef


def _plan() -> Plan:
    providers = {n: Provider(name=n, adapter="command", capability=n) for n in ("a", "b", "c")}
    evidence = Evidence(path=Path("e"), version=3, repositories={}, requires={}, claims={})
    return Plan(
        root=Path("/"),
        change=ChangeRef("c", Path("/c")),
        evidence=evidence,
        execution=None,
        repositories={},
        providers=providers,
        services={},
    )


def test_states_and_details_follow_events() -> None:
    out = io.StringIO()
    board = LiveBoard(_plan(), Console(file=out, force_terminal=True, width=100))
    board.event(RunEvent("a", "started", None))
    board.event(RunEvent("b", "waiting", "workspace-write:self"))
    board.event(RunEvent("c", "cached", None))
    board.event(RunEvent("c", "finished", "ok"))
    board.event(RunEvent("a", "finished", "failed"))
    board.event(RunEvent("b", "skipped", "dependency 'a' failed"))
    text = io.StringIO()
    Console(file=text, width=100).print(board.render())
    rendered = text.getvalue()
    assert "providers 3/3" in rendered
    lines = {
        line.split("│")[1].strip(): line for line in rendered.splitlines() if line.count("│") > 2
    }
    assert "fail" in lines["a"] and "pass" not in lines["a"]
    assert "skipped" in lines["b"] and "dependency 'a' failed" in lines["b"]
    assert "cached" in lines["c"]


def test_inconclusive_and_no_receipt_are_finished_states() -> None:
    out = io.StringIO()
    board = LiveBoard(_plan(), Console(file=out, force_terminal=True, width=100))
    board.event(RunEvent("a", "finished", "inconclusive"))
    board.event(RunEvent("b", "finished", "no receipt"))
    board.event(RunEvent("c", "finished", "ok"))
    text = io.StringIO()
    Console(file=text, width=100).print(board.render())
    rendered = text.getvalue()
    assert "providers 3/3" in rendered
    assert "inconclusive" in rendered and "no receipt" in rendered

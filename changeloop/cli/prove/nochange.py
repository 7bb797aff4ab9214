"""The glue between ``prove`` and the no-change record (docs/nochange.md).

Before the plan loads, ``prove`` asks whether the signed record answers this
re-prove (``config_before_plan``, ``answerable``, ``answer_from_record``: the
same output a full re-prove gives, providers replayed as cached); after a full
run it asks the record to be written again (``remember``). Imports stay inside
the functions: this module is on the no-change answer's path, which must stay lean
(tests/nochange/test_nochange_speed.py).
"""

from __future__ import annotations

import io
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from changeloop.cli import common
from changeloop.errors import ChangeloopError
from changeloop.text import TerminalText

if TYPE_CHECKING:
    import argparse

    from changeloop.model import Plan
    from changeloop.nochange.content import Content
    from changeloop.records import RunEvent


class Before(NamedTuple):
    """What ``prove`` reads before the plan is loaded."""

    root: Path
    change: Any
    config: dict[str, str | None]  # digests of the change's configuration files
    content: Content | None  # the no-change check's content identities, begun


def config_before_plan(args: argparse.Namespace, *, answering: bool) -> Before | None:
    """The root, the change and the digests of its configuration files, read before the plan
    is loaded; with ``answering``, the no-change check's git work is begun first
    (``nochange.content.begin``), so that it runs while the rest is imported.

    None when the root or change cannot be found: loading the plan then says why.
    """
    from changeloop.workspace import discovery as workspace

    try:
        root = common.find_root(args)
        change = workspace.find_change(root, args.change)
    except ChangeloopError:
        return None
    content = None
    if answering:
        from changeloop.nochange.content import begin

        content = begin(root, args.sandbox)
    from changeloop.nochange.key import config_digests

    return Before(root, change, config_digests(change.path), content)


def answerable(args: argparse.Namespace) -> bool:
    """Options under which a re-prove may be answered from the no-change record (never
    with a trust of its own: the record was judged with the checkout's)."""
    from changeloop.cli import trust_flags

    return not (
        trust_flags.requested(args)
        or args.dry_run
        or args.no_cache
        or args.report
        or args.sign_key is not None
        or args.executor != "local"
        or args.publish is not None
        or args.cache_from is not None
    )


def answer_from_record(
    args: argparse.Namespace,
    before: Before,
    *,
    jobs: int,
    seen: dict[str, str],
    known: dict[str, Any],
) -> int | None:
    """Print what a full re-prove would, from the signed record; None: run the full path."""
    from changeloop.nochange.answer import answer
    from changeloop.nochange.key import option_key
    from changeloop.process.sweep import sweep_before_answering

    root, change = before.root, before.change
    sweep_before_answering(root)  # a killed run's processes and ports end here too

    found = answer(
        root,
        change.id,
        change.path,
        config=before.config,
        options=option_key(
            sandbox=args.sandbox, issuer=args.issuer, url=args.url, fail_fast=args.fail_fast
        ),
        jobs=jobs,
        seen=seen,
        known=known,
        content=before.content,
    )
    if found is None:
        return None
    for warning in found.warnings:
        common.say(warning)
    if found.archived is not None:
        common.say(f"using archived change {found.archived}")
    _replay(args, found.providers)
    if common.json_mode(args):
        common.emit_json(found.json)
    terminal = TerminalText(sys.stderr)
    out = terminal.as_textio()
    out.write(common.replayed(found.board))
    out.flush()
    return 0 if found.proven else 1


def _replay(args: argparse.Namespace, providers: tuple[str, ...]) -> None:
    """The progress a full re-prove shows for providers reused from the cache."""
    from types import SimpleNamespace
    from typing import cast

    from changeloop.cli.board import Progress

    change = SimpleNamespace(id=args.change)
    stub = cast("Plan", SimpleNamespace(providers=dict.fromkeys(providers), change=change))
    # RunEvent's fields, without importing the run's records (and the verdict they carry)
    events = [
        cast("RunEvent", SimpleNamespace(provider=name, kind=kind, detail=detail))
        for name in providers
        for kind, detail in (("cached", None), ("finished", "ok"))
    ]
    if sys.stderr.isatty() and not common.json_mode(args):
        from rich.console import Console

        from changeloop.cli.live import LiveBoard

        with LiveBoard(stub, Console(stderr=True)) as live:
            for event in events:
                live.event(event)
        return
    # The same lines the full path writes one by one, written at once: 300 flushed
    # writes to a pipe cost more than the whole decision.
    buffer = io.StringIO()
    progress = Progress(stub, buffer)
    for event in events:
        progress.event(event)
    terminal = TerminalText(sys.stderr)
    terminal.write(buffer.getvalue())
    terminal.flush()


def remember(
    plan: Plan,
    options: Any,
    result: Any,
    config: dict[str, str | None],
    steps: list[tuple[str, str | None]],
) -> None:
    """Sign this answer as the change's no-change record when a cached re-prove repeats it.

    Its board is recorded with the paths and ``--root`` left as tokens (``steps`` were
    made that way too), filled in when it is replayed (``common.replayed``).
    """

    from changeloop import preflight
    from changeloop.cli.board import render_board, to_json
    from changeloop.nochange import record

    def render(shown: Any) -> tuple[dict[str, Any], str]:
        buffer = io.StringIO()
        with common.recording():
            render_board(shown, buffer, steps)
        return to_json(shown), buffer.getvalue()

    try:
        record.remember(
            plan,
            options,
            result,
            config=config,
            warnings=preflight.warnings(plan),
            render=render,
        )
    except (ChangeloopError, OSError, ValueError):  # a KeyError or TypeError is our bug
        return  # a cache: a record not written is a full run next time

"""The full ``prove`` run: the engine under the signal watcher, its board, report and record.

Reached once the plan is loaded and the no-change record did not answer
(``changeloop.cli.prove.run``); imported only then, so its imports (anyio, the
engine, rich for a terminal) are never paid by a re-prove answered from its record.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from changeloop.cli import common, trust_flags
from changeloop.cli.prove.args import jobs_wanted
from changeloop.cli.prove.nochange import remember
from changeloop.errors import ChangeloopError, Problem
from changeloop.text import TerminalText

if TYPE_CHECKING:
    import argparse

    from changeloop.cli.live import LiveBoard
    from changeloop.model import Plan
    from changeloop.trust import Trust


def prove_full(
    args: argparse.Namespace,
    plan: Plan,
    config: dict[str, str | None] | None,
    seen: dict[str, str] | None = None,
    known: dict[str, Any] | None = None,
    *,
    trust: Trust,
) -> int:
    """Run the plan through the engine, show it (board or live view), and decide: the exit code.

    ``seen`` and ``known`` are what the no-change check learnt on its way to a miss
    (content trees, carried inputs digests); the full path starts from them. ``plan``
    judges with ``trust`` already (``trust_flags.trusted``).
    """
    import anyio

    from changeloop.cli.board import Progress, render_board, to_json
    from changeloop.process.signals import cancel_on_signals
    from changeloop.records import ProveOptions, ProveResult
    from changeloop.run.engine import prove
    from changeloop.workspace.prune import prune_after_prove
    from changeloop.workspace.state import stray_notes

    if args.sign_key is not None:
        from changeloop.signing.keys import load_private_key

        load_private_key(args.sign_key)  # refuse a bad key before anything runs
    usage = _scale_out_problem(args)
    if usage is not None:
        raise ChangeloopError(usage, exit_code=2)
    options = ProveOptions(
        jobs=jobs_wanted(args),
        jobs_given=args.jobs is not None,
        sandbox=args.sandbox,
        fail_fast=args.fail_fast,
        use_cache=not args.no_cache,
        keep_sandbox=args.keep_sandbox,
        sign_key=args.sign_key,
        issuer=args.issuer,
        url=args.url,
        executor=args.executor,
        dask_scheduler=args.dask_scheduler or os.environ.get("CHANGELOOP_DASK_SCHEDULER"),
        dask_tls_ca_file=args.dask_tls_ca_file,
        dask_tls_cert=args.dask_tls_cert,
        dask_tls_key=args.dask_tls_key,
        dask_insecure=args.dask_insecure,
        dask_worker_timeout=args.dask_worker_timeout,
        publish=args.publish,
        cache_from=args.cache_from,
        own_trust=trust_flags.requested(args),
        trees=dict(seen or {}),
    )
    if options.executor == "dask":  # refused before anything runs: no extra, no TLS
        from changeloop.executors.opening import check_dask, insecure_note

        check_dask(options)  # a refusal reaches the boundary (exit 2)
        note = insecure_note(options)
        if note is not None:
            common.say(note)
    live = sys.stderr.isatty() and not common.json_mode(args)
    terminal = TerminalText(sys.stderr)  # reasons quote signed strings: escape controls
    estimates = _estimates(plan)
    progress = Progress(plan, terminal.as_textio(), estimates=estimates)
    board: LiveBoard | None = None
    if live:  # rich only for a terminal (its imports otherwise spent for nothing)
        from rich.console import Console

        from changeloop.cli.live import LiveBoard

        board = LiveBoard(plan, Console(stderr=True), estimates=estimates)
    outcome: dict[str, ProveResult] = {}
    interrupted = False

    async def main() -> None:
        nonlocal interrupted
        async with cancel_on_signals() as interruption:
            if board is not None:
                with board:
                    outcome["result"] = await prove(plan, options, board.event, known=known)
            else:
                outcome["result"] = await prove(plan, options, progress.event, known=known)
        interrupted = interruption.interrupted

    try:
        anyio.run(main)
    finally:
        progress.close()  # progress lines are written in batches (board.Progress)
    if interrupted or "result" not in outcome:
        raise KeyboardInterrupt  # the boundary answers it (exit 130, one document)
    result = outcome["result"]
    result.trust = trust
    for note in result.notes:
        common.say(note)
    for note in stray_notes(plan.root):  # said, not recorded: the answer does not depend on it
        common.say(f"note: {note}")
    if common.json_mode(args):
        common.emit_json(to_json(result))
    steps = _steps(plan, result, args.sign_key)
    report = _write_report(plan, result.run_id, args.sign_key, trust) if args.report else None
    render_board(result, terminal.as_textio(), steps(), colour=sys.stderr if live else None)
    if report is not None:
        common.say(f"report: {report}")
    if config is not None:
        with common.recording():  # the record's board is replayed from another directory
            recorded = steps()
        remember(plan, options, result, config, recorded)
    prune_after_prove(plan.root, plan.change.id)  # its old runs; the unused cache once a day
    return 0 if result.verdict.proven else 1


def _steps(plan: Plan, result: Any, sign_key: Path | None) -> Any:
    """The board's Next steps, made on demand (doctor is asked at most once)."""
    from changeloop.cli.evidence import unresolved_count
    from changeloop.cli.prove.steps import prove_steps

    asked: list[int] = []

    def doctor() -> int:
        if not asked:
            asked.append(unresolved_count(plan.root, plan.change))
        return asked[0]

    return lambda: prove_steps(result, sign_key=sign_key, doctor=doctor)


def _estimates(plan: Plan) -> dict[str, float]:
    """How long each provider took when it last ran (the scheduler's hints), for the views."""
    from changeloop.workspace.state import StateDir

    try:
        return StateDir(plan.root).load_durations(plan.change.id)
    except (ChangeloopError, OSError):
        return {}  # hints only: a view without them is still a view


def _scale_out_problem(args: argparse.Namespace) -> Problem | None:
    """--publish without --sign-key or into a file, or a --cache-from that is not a
    directory: refused before anything runs."""
    from changeloop.cli.argtypes import file_in_the_way
    from changeloop.errors import Location

    if args.publish is not None and args.sign_key is None:
        return Problem(
            code="publish_needs_sign_key",
            message="--publish shares receipts signed with --sign-key; none was given",
            fix="add --sign-key PATH (the CI key an external provider's ci: trusts)",
        )
    blocked = file_in_the_way(args.publish) if args.publish is not None else None
    if blocked is not None:
        return Problem(
            code="publish_not_a_directory",
            message="--publish names it, and it is a file, not a directory"
            if blocked == args.publish
            else f"--publish {args.publish} lies under it, and it is a file, not a directory",
            location=Location(str(blocked)),
            fix="name a directory (it is created if missing) for the CI run's shared cache",
        )
    if args.cache_from is not None and not args.cache_from.is_dir():
        return Problem(
            code="cache_from_missing",
            message=f"--cache-from {args.cache_from}: not a directory",
            fix="name the directory a CI run wrote with --publish",
        )
    return None


def _write_report(plan: Plan, run_id: str, sign_key: Path | None, trust: Trust) -> str | None:
    """``--report``: the page of this very run; a failure to write it never changes the verdict.

    Receipts signed with ``--sign-key`` are verified with that key's public half.
    """
    from changeloop.report.write import write_report
    from changeloop.signing.keys import load_private_key

    keys = [load_private_key(sign_key).public_key()] if sign_key is not None else []
    try:
        path, _ = write_report(plan, run_id=run_id, public_keys=keys, trust=trust)
    except ChangeloopError as exc:
        for problem in exc.problems:
            common.say(f"warning: report not written: {problem.render()}")
        return None
    except OSError as exc:
        common.say(f"warning: report not written: {exc.filename or ''} {exc.strerror or exc}")
        return None
    return path.absolute().as_uri()

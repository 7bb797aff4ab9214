"""``changeloop prove <change>``: run the change's providers and decide it.

Exit 0 when the change is proven, 1 when it is not, 2 when configuration or
preflight refuses it, 130 when interrupted (DESIGN.md §7).
"""

from __future__ import annotations

import argparse
import io
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from changeloop.cli import common
from changeloop.cli.common import only_user_error
from changeloop.errors import ChangeloopError, PreflightError, Problem
from changeloop.text import TerminalText

if TYPE_CHECKING:
    from changeloop.cli.live import LiveBoard
    from changeloop.model import Plan
    from changeloop.run.records import RunEvent

# The sandbox modes as the model names them (``model.SandboxMode``, in its order), without
# importing the model or the sandboxes (a re-prove answered from its record needs neither:
# ~7 ms of dataclasses); tests/test_nochange.py holds these equal to SandboxMode,
# changeloop.sandboxes.MODES and DEFAULT_MODE.
SANDBOX_MODES: tuple[str, ...] = ("worktree", "copy", "none")
DEFAULT_SANDBOX = "none"

EMPTY: dict[str, Any] = {"version": "1", "status": "not-proven", "claims": {}, "providers": []}


def register(sub: Any) -> None:
    parser = sub.add_parser(
        "prove",
        help="run the providers of a change and write signed receipts",
        description=(
            "Run every provider the change needs (from execution.yaml, or derived from the\n"
            "repository's manifests), in parallel under their resources, write one signed\n"
            "receipt per capability, and decide each claim.\n\n"
            "exit codes: 0 proven, 1 not proven, 2 refused by configuration or preflight,\n"
            "130 interrupted"
        ),
        epilog=(
            "examples:\n"
            "  changeloop prove add-greeting --dry-run     show the plan, run nothing\n"
            "  changeloop prove add-greeting               prove it\n"
            "  changeloop prove add-greeting --json        one JSON document on stdout\n"
            "  changeloop prove add-greeting --sandbox worktree --no-cache"
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    common.add_common(parser)
    parser.add_argument("change", help="change id (openspec/changes/<id>/, archived ones too)")
    parser.add_argument("--dry-run", action="store_true", help="print the plan and run nothing")
    parser.add_argument(
        "--jobs",
        "-j",
        type=_positive,
        default=None,
        metavar="N",
        help=f"providers run at once (default: CPU count, {os.cpu_count() or 2} here; "
        "on a Dask cluster: its worker threads, and N caps the jobs in flight there)",
    )
    parser.add_argument(
        "--sandbox",
        choices=SANDBOX_MODES,
        default=DEFAULT_SANDBOX,
        help="where providers run: in place (none, default); worktree: a git repository of "
        "its own holding the tracked content; copy: the same with untracked-not-ignored "
        "files too",
    )
    parser.add_argument("--keep-sandbox", action="store_true", help="keep sandboxes after the run")
    parser.add_argument(
        "--fail-fast", action="store_true", help="start nothing new after a failure"
    )
    parser.add_argument("--no-cache", action="store_true", help="re-run providers even when cached")
    parser.add_argument(
        "--sign-key",
        type=Path,
        metavar="PATH",
        help="Ed25519 private key (PKCS#8 PEM) to sign receipts; default: the workspace key",
    )
    parser.add_argument(
        "--issuer",
        default="local",
        help="issuer recorded in receipts (e.g. github-actions in CI; default: local)",
    )
    parser.add_argument("--url", help="URL of the CI run, recorded in receipts")
    parser.add_argument(
        "--executor",
        choices=("local", "dask"),
        default="local",
        help="where provider commands run: this machine (local, default) or a Dask cluster "
        "(needs pip install 'changeloop[dask]')",
    )
    parser.add_argument(
        "--dask-scheduler",
        metavar="ADDRESS",
        default=None,
        help="the Dask scheduler, e.g. tcp://host:8786 (default: $CHANGELOOP_DASK_SCHEDULER)",
    )
    parser.add_argument(
        "--publish",
        type=Path,
        metavar="DIR",
        help="copy each receipt signed with --sign-key to DIR/<fingerprint>/<capability>.json",
    )
    parser.add_argument(
        "--cache-from",
        type=Path,
        metavar="DIR",
        help="reuse a receipt published in DIR when its fingerprint matches and it verifies "
        "with a ci key the change trusts",
    )
    parser.add_argument(
        "--report",
        action="store_true",
        help="also write the HTML report of this run (.changeloop/report/<change>.html)",
    )
    parser.set_defaults(func=run)


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of at least 1, got {text!r}")
    return value


def load_plan(args: argparse.Namespace, shape: dict[str, Any] | None = None) -> Plan:
    """Root, change, configuration, derived wiring, preflight — or a ChangeloopError.

    ``shape`` (the JSON document of a refusal) learns the root and change as
    soon as they are known, so an error document still says what it was about.
    """
    from changeloop import preflight, workspace
    from changeloop.config.schema import validated_memo
    from changeloop.detect import derived_explained, load_context
    from changeloop.detect.derive import derivation_possible
    from changeloop.plan import build_plan

    shape = shape if shape is not None else {}
    root = workspace.find_root(override=common.root_arg(args))
    shape["root"] = str(root)
    change = workspace.find_change(root, args.change)
    shape["change"] = change.id
    with validated_memo(_checked_state(root)):
        context = load_context(root, change, only_if_derivable=True)
    derived = {}
    if derivation_possible(context.evidence, context.execution, context.repositories):
        derived = {name: p for name, (p, _) in derived_explained(context).items()}
    plan = build_plan(root, change, derived=derived, config=(context.evidence, context.execution))
    problems = preflight.check(plan)
    if problems:
        raise PreflightError(problems)
    for warning in preflight.warnings(plan):
        common.say(warning)
    return plan


def run(args: argparse.Namespace) -> int:
    _cheap_shutdown()
    shape = dict(EMPTY)
    config = _config_before_plan(args)
    seen: dict[str, str] = {}  # content trees the no-change check computed
    known: dict[str, Any] = {}  # the verified record's inputs digests (run.carried)
    if config is not None and _answerable(args):
        code = _answer_from_record(args, *config, seen=seen, known=known)
        if code is not None:
            return code
    try:
        plan = load_plan(args, shape)
    except ChangeloopError as exc:
        return common.fail(args, exc, shape)
    except KeyboardInterrupt:  # Ctrl-C before anything ran: still one document
        common.say("interrupted before anything ran")
        if common.json_mode(args):
            common.emit_json({**shape, "interrupted": True})
        return 130
    if plan.change.archived:
        common.say(f"using archived change {plan.change.path.relative_to(plan.root)}")
    if args.dry_run:
        return _dry_run(args, plan)
    from changeloop.engine import nothing_to_prove

    empty = nothing_to_prove(plan)
    if empty is not None:
        if common.json_mode(args):
            common.emit_json(
                {
                    **EMPTY,
                    "root": str(plan.root),
                    "change": plan.change.id,
                    "errors": [empty.to_json()],
                }
            )
        common.say(empty.render())
        return 1
    return _prove(args, plan, config[2] if config else None, seen, known)


_SHUTDOWN_REGISTERED: list[bool] = []


def _cheap_shutdown() -> None:
    """At interpreter exit, move every object out of the garbage collector's reach first.

    The collection the interpreter makes while tearing down a full ``prove``'s
    objects took ~30 ms of a ~480 ms re-prove (bench/README.md "Issue 15 (hP)").
    Nothing is lost: everything a run writes is on disk before ``prove``
    returns, objects are still freed by reference counting, and ``weakref.finalize``
    callbacks (temporary directories) run from their own exit hook. Registered once
    per process; in-process callers (tests) only meet it when their process ends.
    """
    if _SHUTDOWN_REGISTERED:
        return
    import atexit
    import gc

    atexit.register(gc.freeze)
    _SHUTDOWN_REGISTERED.append(True)


def _checked_state(root: Path) -> Path | None:
    """``.changeloop/`` when ``state.check_state`` accepts it, else None (a state the
    run will refuse is never read; the refusal itself comes where it always did)."""
    from changeloop.state import STATE, check_state

    try:
        check_state(root)
    except ChangeloopError:
        return None
    return root / STATE


def _config_before_plan(args: argparse.Namespace) -> tuple[Path, Any, dict[str, str | None]] | None:
    """(root, change, digests of its configuration files) read before the plan is loaded.

    None when the root or change cannot be found: loading the plan then says why.
    """
    from changeloop import workspace
    from changeloop.nochange import config_digests

    try:
        root = workspace.find_root(override=common.root_arg(args))
        change = workspace.find_change(root, args.change)
    except ChangeloopError:
        return None
    return root, change, config_digests(change.path)


def _answerable(args: argparse.Namespace) -> bool:
    """Options under which a re-prove may be answered from the no-change record."""
    return not (
        args.dry_run
        or args.no_cache
        or args.report
        or args.sign_key is not None
        or args.executor != "local"
        or args.publish is not None
        or args.cache_from is not None
    )


def _answer_from_record(
    args: argparse.Namespace,
    root: Path,
    change: Any,
    config: dict[str, str | None],
    *,
    seen: dict[str, str],
    known: dict[str, Any],
) -> int | None:
    """Print what a full re-prove would, from the signed record; None: run the full path."""
    from changeloop import nochange

    found = nochange.answer(
        root,
        change.id,
        change.path,
        config=config,
        options=nochange.option_key(
            sandbox=args.sandbox, issuer=args.issuer, url=args.url, fail_fast=args.fail_fast
        ),
        jobs=_jobs(args),
        seen=seen,
        known=known,
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
    out.write(found.board)
    out.flush()
    return 0 if found.proven else 1


def _replay(args: argparse.Namespace, providers: tuple[str, ...]) -> None:
    """The progress a full re-prove shows for providers reused from the cache."""
    from types import SimpleNamespace
    from typing import cast

    from changeloop.cli.board import Progress

    stub = cast("Plan", SimpleNamespace(providers=dict.fromkeys(providers)))
    # RunEvent's fields, without importing the run's records (and the verdict they carry)
    events = [
        cast("RunEvent", SimpleNamespace(provider=name, kind=kind, detail=detail))
        for name in providers
        for kind, detail in (("started", None), ("cached", None), ("finished", "ok"))
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


def _dry_run(args: argparse.Namespace, plan: Plan) -> int:
    from changeloop.graph import topological_order
    from changeloop.wiring import wiring_digest

    order = topological_order({p.name: p.depends_on for p in plan.providers.values()})
    providers = [
        {
            "name": p.name,
            "adapter": p.adapter,
            "capability": p.capability,
            "repository": p.repository,
            "resources": list(p.resources),
            "dependsOn": list(p.depends_on),
            "services": list(p.services),
            "origin": p.origin,
            "confidence": p.confidence,
            "command": list(p.command) if p.command else None,
            # what a receipt made by this provider records as predicate.changeloop.wiring
            "wiring": wiring_digest(plan, p),
            **_mutants(plan, p),
        }
        for p in plan.providers.values()
    ]
    if common.json_mode(args):
        common.emit_json(
            {
                "version": "1",
                "root": str(plan.root),
                "change": plan.change.id,
                "dryRun": True,
                "order": order,
                "providers": providers,
            }
        )
        return 0
    common.say(f"plan for change {plan.change.id} ({len(providers)} providers)")
    for p in plan.providers.values():
        deps = f" after {', '.join(p.depends_on)}" if p.depends_on else ""
        common.say(
            f"  {p.name}: {p.adapter} → {p.capability} in {p.repository or '-'}"
            f" [{', '.join(p.resources)}]{deps}"
        )
        if p.command:
            common.say(f"      $ {' '.join(p.command)}")
        for claim, count in _mutants(plan, p).get("mutants", {}).items():
            shown = "unknown until a traced run exists" if count is None else str(count)
            common.say(f"      mutants for {claim}: {shown}")
    common.say(f"order: {' → '.join(order)}")
    common.say("\nNext steps:\n  changeloop prove " + plan.change.id)
    return 0


def _mutants(plan: Plan, provider: Any) -> dict[str, Any]:
    """DESIGN.md §11: a mutation provider's mutant count per claim, from the last traced run."""
    if provider.adapter != "mutation":
        return {}
    from changeloop.providers.mutation import dry_run_counts

    return {"mutants": dry_run_counts(plan, provider)}


def _prove(
    args: argparse.Namespace,
    plan: Plan,
    config: dict[str, str | None] | None,
    seen: dict[str, str] | None = None,
    known: dict[str, Any] | None = None,
) -> int:
    import anyio

    from changeloop.cli.board import Progress, render_board, to_json
    from changeloop.engine import ProveOptions, ProveResult, prove
    from changeloop.signals import cancel_on_signals

    if args.sign_key is not None:
        from changeloop.keys import load_private_key

        load_private_key(args.sign_key)  # refuse a bad key before anything runs
    refused = {**EMPTY, "root": str(plan.root), "change": plan.change.id}
    usage = _scale_out_problem(args)
    if usage is not None:
        return common.fail(args, ChangeloopError(usage, exit_code=2), refused)
    options = ProveOptions(
        jobs=_jobs(args),
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
        publish=args.publish,
        cache_from=args.cache_from,
        trees=dict(seen or {}),
    )
    live = sys.stderr.isatty() and not common.json_mode(args)
    terminal = TerminalText(sys.stderr)  # reasons quote signed strings: escape controls
    progress = Progress(plan, terminal.as_textio())
    board: LiveBoard | None = None
    if live:  # rich only for a terminal (~15 ms of imports otherwise spent for nothing)
        from rich.console import Console

        from changeloop.cli.live import LiveBoard

        board = LiveBoard(plan, Console(stderr=True))
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
    except ChangeloopError as exc:
        return common.fail(args, exc, refused)
    except BaseExceptionGroup as group:  # raised through the signal watcher's task group
        user = only_user_error(group)
        if user is None:
            raise
        return common.fail(args, user, refused)
    except KeyboardInterrupt:
        interrupted = True
    finally:
        if isinstance(progress, Progress):
            progress.flush()  # progress lines are written in batches (board.Progress)
    if interrupted or "result" not in outcome:
        common.say(
            "interrupted: running processes were stopped; unfinished providers wrote no receipt"
        )
        if common.json_mode(args):
            common.emit_json(
                {**EMPTY, "root": str(plan.root), "change": plan.change.id, "interrupted": True}
            )
        return 130
    result = outcome["result"]
    for note in result.notes:
        common.say(note)
    if common.json_mode(args):
        common.emit_json(to_json(result))
    render_board(result, terminal.as_textio())
    if args.report:
        _write_report(plan, result.run_id, args.sign_key)
    if config is not None:
        _remember(plan, options, result, config)
    return 0 if result.verdict.proven else 1


def _remember(plan: Plan, options: Any, result: Any, config: dict[str, str | None]) -> None:
    """Sign this answer as the change's no-change record when a cached re-prove repeats it."""

    from changeloop import nochange, preflight
    from changeloop.cli.board import render_board, to_json

    def render(shown: Any) -> tuple[dict[str, Any], str]:
        buffer = io.StringIO()
        render_board(shown, buffer)
        return to_json(shown), buffer.getvalue()

    try:
        nochange.remember(
            plan,
            options,
            result,
            config=config,
            warnings=preflight.warnings(plan),
            render=render,
        )
    except (ChangeloopError, OSError, ValueError, KeyError, TypeError):
        return  # a cache: a record not written is a full run next time


def _scale_out_problem(args: argparse.Namespace) -> Problem | None:
    """--publish without --sign-key, or a --cache-from that is not a directory: refused."""
    if args.publish is not None and args.sign_key is None:
        return Problem(
            code="publish_needs_sign_key",
            message="--publish shares receipts signed with --sign-key; none was given",
            fix="add --sign-key PATH (the CI key an external provider's ci: trusts)",
        )
    if args.cache_from is not None and not args.cache_from.is_dir():
        return Problem(
            code="cache_from_missing",
            message=f"--cache-from {args.cache_from}: not a directory",
            fix="name the directory a CI run wrote with --publish",
        )
    return None


def _write_report(plan: Plan, run_id: str, sign_key: Path | None) -> None:
    """``--report``: the page of this very run; a failure to write it never changes the verdict.

    Receipts signed with ``--sign-key`` are verified with that key's public half.
    """
    from changeloop.keys import load_private_key
    from changeloop.report import write_report

    keys = [load_private_key(sign_key).public_key()] if sign_key is not None else []
    try:
        path, _ = write_report(plan, run_id=run_id, public_keys=keys)
    except ChangeloopError as exc:
        for problem in exc.problems:
            common.say(f"warning: report not written: {problem.render()}")
        return
    except OSError as exc:
        common.say(f"warning: report not written: {exc.filename or ''} {exc.strerror or exc}")
        return
    try:
        shown = path.relative_to(plan.root.resolve()).as_posix()
    except ValueError:
        shown = str(path)
    common.say(f"report: {shown}")


def _jobs(args: argparse.Namespace) -> int:
    """``--jobs``, or this machine's CPU count when it was not given (a cluster caps by it)."""
    return max(1, args.jobs or os.cpu_count() or 2)

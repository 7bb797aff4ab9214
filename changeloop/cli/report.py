"""``changeloop report <change>``: one static HTML page a reviewer reads. Runs nothing.

Exit 0 when the page was written, whatever the verdict (docs/design.md); 2 when
the change, its configuration or ``--run`` is refused.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from changeloop.cli import common, trust_flags

if TYPE_CHECKING:
    from changeloop.trust import Trust

if TYPE_CHECKING:
    from changeloop.cli.boundary import Said


def register(sub: Any) -> None:
    parser = sub.add_parser(
        "report",
        help="write one self-contained HTML page of the change's evidence (runs nothing)",
        description=(
            "Re-verify the change's receipts (signature, content, wiring: the checks of `gate`)\n"
            "and write one static HTML page: verdict, claims x capabilities, providers, the\n"
            "run's timeline and findings. Inline CSS and JS; the page fetches nothing.\n\n"
            "exit codes: 0 written (whatever the verdict), 2 refused"
        ),
        epilog=(
            "examples:\n"
            "  changeloop report add-greeting         .changeloop/report/add-greeting.html\n"
            "  changeloop report add-greeting --out r.html\n"
            "  changeloop report add-greeting --run 20260101T000000Z-abc123"
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "change", metavar="CHANGE", help="change id (openspec/changes/<id>/, archived ones too)"
    )
    parser.add_argument(
        "--out",
        type=Path,
        metavar="FILE",
        help="where to write the page (default: .changeloop/report/<change>.html)",
    )
    parser.add_argument(
        "--run",
        metavar="RUN_ID",
        help="report this run's receipts (.changeloop/runs/RUN_ID/) instead of the latest",
    )
    common.add_public_keys(
        parser,
        "also trust receipts signed by this Ed25519 public key (repeatable), as for gate",
    )
    trust_flags.add(parser)
    common.add_common(parser)
    parser.set_defaults(func=run)


def empty(said: Said) -> dict[str, Any]:
    """The ``--json`` document of a refused or interrupted ``report``."""
    return {"version": "1", "change": said.value("change"), "status": "not-proven", "path": None}


def run(args: argparse.Namespace) -> int:
    from changeloop.cli.prove.plan import load_plan
    from changeloop.report.write import write_report

    plan, trust = trust_flags.trusted(args, load_plan(args))
    if args.run is not None:
        _refuse_run_without_runs(plan.root, plan.change.id, args.run)
    path, report = write_report(
        plan, out=args.out, run_id=args.run, public_keys=trust.command_line, trust=trust
    )
    return announce(args, plan.root, path, report, trust)


def _refuse_run_without_runs(root: Path, change: str, run_id: str) -> None:
    """``--run`` where no run is recorded: there is nothing to choose from, so say how to
    make one (report/runs.py answers an unknown id among recorded runs)."""
    from changeloop.errors import ChangeloopError, Problem
    from changeloop.workspace.state import StateDir

    runs = StateDir(root).runs
    if runs.is_dir() and any(p.is_dir() for p in runs.iterdir()):
        return
    raise ChangeloopError(
        Problem(
            code="unknown_run",
            message=f"no run {run_id!r}: no run is recorded yet in this workspace",
            fix=f"run `changeloop prove {change}` first (it records a run), then"
            f" `changeloop report {change}`; omit --run to report the latest run",
        )
    )


def announce(args: argparse.Namespace, root: Path, path: Path, report: Any, trust: Trust) -> int:
    """Print the page's path (stdout, or in the one --json document) and the verdict."""
    import sys

    shown = common.shown(path)  # from here: the user types it, or clicks the link below
    if common.json_mode(args):
        common.emit_json(
            {
                "version": "1",
                "change": report.change,
                "status": "proven" if report.proven else "not-proven",
                "runId": report.run_id,
                "path": _relative(path, root),
                "trust": trust.to_json(),
                "findings": trust.findings(),
            }
        )
    else:
        sys.stdout.write(shown + "\n")
    verdict = "PROVEN" if report.proven else "NOT PROVEN"
    common.say(f"change {report.change}: {verdict}; report written to {path.absolute().as_uri()}")
    trust_flags.say(trust)
    return 0


def _relative(path: Path, root: Path) -> str:
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return str(path)

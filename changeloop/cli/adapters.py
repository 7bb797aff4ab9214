"""``changeloop adapters check``: do the project's tools still have what the adapters use?

Each runner an adapter drives has a contract in the package
(changeloop/contracts/<tool>.yaml) naming the flags and subcommands the
adapter relies on. This verb asserts them against the tools the workspace's
repositories resolve — presence only, asked of each tool's own help, never a
snapshot of it, never running project code — and exits 2 on drift, naming
tool, version and the missing capability; 0 when nothing drifted.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from changeloop.cli import common, help_examples

if TYPE_CHECKING:
    from changeloop.cli.boundary import Said


def empty(said: Said) -> dict[str, Any]:  # noqa: ARG001 (every verb's shape takes what was said)
    """The ``--json`` document of a refused or interrupted ``adapters check``."""
    return {"version": "1", "status": "refused", "tools": []}


def register(sub: Any) -> None:
    parser = sub.add_parser(
        "adapters",
        help="check the tools the adapters drive against their capability contracts",
        description="Tool capability contracts (changeloop/contracts/*.yaml).",
        **help_examples.ending("adapters"),
    )
    common.add_common(parser)
    verbs = parser.add_subparsers(dest="adapters_verb", metavar="ACTION")
    verbs.required = True
    check = verbs.add_parser(
        "check",
        help="assert each adapter's contract against the tools the project resolves",
        description=(
            "For each repository (of --change, else of every change in the workspace), find\n"
            "the tools it would run (node_modules/.bin, its interpreter, PATH) and assert the\n"
            "flags and subcommands changeloop's adapters rely on are there. Exit 2 on drift\n"
            "(naming tool, version and what is missing), 0 otherwise."
        ),
        **help_examples.ending("adapters check"),
    )
    check.add_argument("--change", metavar="ID", help="only this change's repositories")
    check.add_argument(
        "--matrix",
        metavar="DIR",
        type=Path,
        help="instead: check each contract against every install of its tool under DIR "
        "(one directory per install, named <tool>@<version>), side by side",
    )
    common.add_common(check)
    check.set_defaults(func=run)


def _repositories(root: Path, change_id: str | None) -> dict[str, Path]:
    """Repository name → path; one entry per distinct path."""
    from changeloop.plan import build_plan
    from changeloop.workspace import discovery as workspace

    changes = (
        [workspace.find_change(root, change_id)]
        if change_id
        else [c for c in workspace.list_changes(root) if not c.archived]
    )
    out: dict[str, Path] = {}
    seen: set[Path] = set()
    for change in changes:
        plan = build_plan(root, change)
        for name, repo in plan.repositories.items():
            if repo.path not in seen:
                seen.add(repo.path)
                out[name if name not in out else f"{change.id}:{name}"] = repo.path
    if not out:
        out["self"] = root.resolve()
    return out


def run(args: argparse.Namespace) -> int:
    from changeloop.contracts.check import check_repository, save_record

    if args.matrix is not None:
        return _matrix(args)
    root = common.find_root(args)
    reports = [
        report
        for name, path in _repositories(root, args.change).items()
        for report in check_repository(name, path, root)
    ]
    save_record(root, reports)  # what `evidence doctor` reports, without running anything
    drift = [r for r in reports if r.status == "drift"]
    status = "drift" if drift else "ok"
    if common.json_mode(args):
        common.emit_json(
            {"version": "1", "status": status, "tools": [r.to_json() for r in reports]}
        )
    for r in reports:
        if r.status == "absent":
            common.say(f"  -      {r.tool} in {r.repository}: not resolved ({r.message})")
        elif r.status == "ok":
            common.say(
                f"  ok     {r.tool} {r.version or '(version unknown)'} in {r.repository} "
                f"({r.path}): {', '.join(r.checked)}"
            )
        else:
            common.say(f"  DRIFT  {r.tool} in {r.repository}: {r.message}")
            for m in r.missing:
                common.say(f"           missing {m.kind} {m.name} (asked: {' '.join(m.probe)})")
    if not reports:
        common.say("no tool with a contract is used by this workspace's repositories")
    absent = sum(1 for r in reports if r.status == "absent")
    note = f" ({absent} tool(s) not resolved: nothing to check there)" if absent else ""
    common.say(f"adapters check: {status}{note}")
    return 2 if drift else 0


def _matrix(args: argparse.Namespace) -> int:
    """``--matrix DIR``: the conformance table of each contract over installed versions."""
    from changeloop.contracts.check import check_matrix
    from changeloop.errors import ChangeloopError, Problem

    folder: Path = args.matrix
    if not folder.is_dir():
        raise ChangeloopError(
            [
                Problem(
                    code="matrix_not_a_directory",
                    message=f"--matrix {folder}: not a directory",
                    fix="name the directory holding one install per tool version "
                    "(<tool>@<version>), e.g. the one bench/tool_matrix.py makes",
                )
            ]
        )
    reports = check_matrix(folder)
    drift = [r for r in reports if r.status != "ok"]
    status = "drift" if drift else "ok"
    if common.json_mode(args):
        rows = [{**r.to_json(), "install": r.repository} for r in reports]
        common.emit_json({"version": "1", "status": status, "matrix": rows})
    common.say(f"{'tool':<12} {'install':<22} {'version':<10} {'status':<7} missing")
    for r in reports:
        missing = ", ".join(m.name for m in r.missing) or ("-" if r.status == "ok" else r.message)
        common.say(
            f"{r.tool:<12} {r.repository:<22} {r.version or '?':<10} {r.status:<7} {missing}"
        )
    if not reports:
        common.say(f"no install named <tool>@<version> under {folder}")
    common.say(f"adapters check --matrix: {status}")
    return 2 if drift or not reports else 0

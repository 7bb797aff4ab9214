"""``changeloop quality run --change <id>``: the consumer-quality lanes, each judged alone.

Every lane of ``quality/foundation-quality.json`` runs in each of the change's
repositories it names, in parallel. Each lane's output goes to stderr in one
block (the command log, when this runs as a ``command`` provider); the summary
lists each lane's own result and the worst one decides — nothing is averaged.
Exit 0 when every lane passed, 1 when one failed (or none applies), 2 when the
file or the change is refused. A plain command runner: no ``.changeloop/``
state, no locks; the summary goes to stdout only under ``--json``.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from changeloop.cli import common, help_examples

if TYPE_CHECKING:
    from changeloop.cli.boundary import Said


def register(sub: Any) -> None:
    parser = sub.add_parser(
        "quality",
        help="run the consumer-quality lanes of quality/foundation-quality.json",
        description="Consumer-quality lanes (quality/foundation-quality.json).",
        **help_examples.ending("quality"),
    )
    common.add_common(parser)
    verbs = parser.add_subparsers(dest="quality_verb", metavar="ACTION")
    verbs.required = True
    run_parser = verbs.add_parser(
        "run",
        help="run every lane for the change's repositories; the worst lane decides",
        description=(
            "Run every lane of quality/foundation-quality.json for the change's repositories,\n"
            "in parallel. Each lane keeps its own pass/fail; the worst decides (exit 0 all\n"
            "passed, 1 one failed or none applies, 2 refused). Nothing is averaged."
        ),
        **help_examples.ending("quality run"),
    )
    run_parser.add_argument(
        "--change", required=True, metavar="ID", help="run the lanes of this change's repositories"
    )
    common.add_common(run_parser)
    run_parser.set_defaults(func=run)


def empty(said: Said) -> dict[str, Any]:
    """The ``--json`` document of a refused or interrupted ``quality run``."""
    change = said.value("change") if said.args is not None else None
    return {"version": "1", "change": change, "status": "inconclusive", "lanes": []}


def run(args: argparse.Namespace) -> int:
    from changeloop.errors import ConfigError, Location, Problem
    from changeloop.plan import build_plan
    from changeloop.quality.lanes import QUALITY_FILE, lanes_for, load_quality, run_lanes, worst
    from changeloop.workspace import discovery as workspace

    root = common.find_root(args)
    change = workspace.find_change(root, args.change)
    config = load_quality(root)
    if config is None:
        raise ConfigError(
            Problem(
                code="quality_file_missing",
                message=f"{QUALITY_FILE} does not exist; there are no lanes to run",
                location=Location(QUALITY_FILE),
                fix='commit one: {"version": 1, "lanes": {"lint": {"command": ["npm", "run", '
                '"lint"], "repositories": ["web"]}}}',
            )
        )
    plan = build_plan(root, change)
    pairs = lanes_for(config, plan.repositories)
    results = run_lanes(pairs, plan.repositories)
    for r in results:
        common.say(f"── lane {r.lane} in {r.repository}: {' '.join(r.command)}")
        if r.output:
            common.say(r.output.rstrip("\n"))
        common.say(
            f"── lane {r.lane} in {r.repository}: {r.status}"
            + (f" ({r.reason})" if r.reason else "")
            + f" in {r.duration_ms} ms"
        )
    status = worst(results)
    if common.json_mode(args):
        common.emit_json(
            {
                "version": "1",
                "change": change.id,
                "status": status,
                "lanes": [r.to_json() for r in results],
            }
        )
    if not results:
        repos = ", ".join(sorted(plan.repositories))
        common.say(
            f"no lane of {QUALITY_FILE} covers the change's repositories ({repos}): "
            "nothing was checked, which is not a pass"
        )
    else:
        common.say("summary (each lane's own result; the worst decides):")
        for r in results:
            common.say(f"  {r.status:4}  {r.lane} ({r.repository})")
        common.say(f"quality: {status}")
    return 0 if status == "pass" else 1

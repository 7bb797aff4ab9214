"""``changeloop state [prune]``: what the workspace's ``.changeloop/`` holds, and freeing it.

``state`` shows files and bytes per part (runs per change, cache entries due
to go, the sandboxes directory); ``state prune`` frees now what ``prove``
frees as it goes (``changeloop.workspace.prune``): each change's runs beyond
the last few, cache entries unused for a while that nothing refers to, and
what killed runs left (their processes, temp files and sandboxes). Exit 0,
or 2 when the state is refused (a symlink, tracked by git, not ours).
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from changeloop.cli import common, help_examples

if TYPE_CHECKING:
    from changeloop.cli.boundary import Said


def register(sub: Any) -> None:
    parser = sub.add_parser(
        "state",
        help="show what .changeloop/ holds; `state prune` frees what nothing needs",
        description=(
            "Show what the workspace's .changeloop/ holds: files and bytes per part, runs\n"
            "per change, cache entries unused long enough to go. `state prune` removes them\n"
            "now (prove does the same as it goes): each change's runs beyond the last few,\n"
            "cache entries unused for a while that no latest receipt or no-change record\n"
            "refers to, and what killed runs left behind."
        ),
        **help_examples.ending("state"),
    )
    common.add_common(parser)
    _policy_flags(parser)
    parser.set_defaults(func=show)
    actions = parser.add_subparsers(dest="state_verb", metavar="ACTION")
    prune = actions.add_parser(
        "prune",
        help="remove old runs, unused cache entries and what killed runs left",
        description=(
            "Remove each change's runs beyond the last --keep-runs (default 5,\n"
            "CHANGELOOP_KEEP_RUNS), cache entries unused for --cache-days days (default 30,\n"
            "CHANGELOOP_CACHE_DAYS) that no latest receipt or no-change record refers to,\n"
            "and what killed runs left (processes, temp files, sandboxes). A run still\n"
            "running is never touched."
        ),
        **help_examples.ending("state prune"),
    )
    common.add_common(prune)
    _policy_flags(prune)
    prune.set_defaults(func=prune_now)


def _policy_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--keep-runs",
        type=_whole,
        default=argparse.SUPPRESS,
        metavar="N",
        help="runs kept per change (default: $CHANGELOOP_KEEP_RUNS or 5)",
    )
    parser.add_argument(
        "--cache-days",
        type=_days,
        default=argparse.SUPPRESS,
        metavar="D",
        help="cache entries unused this many days may go (default: $CHANGELOOP_CACHE_DAYS or 30)",
    )


def _whole(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of at least 1, got {text!r}")
    return int(text)


def _days(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 <= value < 1e6:
        raise argparse.ArgumentTypeError(f"expected a number of days (0 or more), got {text!r}")
    return value


def empty(said: Said) -> dict[str, Any]:  # noqa: ARG001 (every verb's shape takes what was said)
    """The ``--json`` document of a refused or interrupted ``state``."""
    return {"version": "1", "root": None}


def _policy(args: argparse.Namespace) -> Any:
    from changeloop.workspace.prune import Policy

    return Policy.from_env(getattr(args, "keep_runs", None), getattr(args, "cache_days", None))


def show(args: argparse.Namespace) -> int:
    from changeloop.sandboxes.place import sandbox_place
    from changeloop.workspace.prune import inventory
    from changeloop.workspace.state import StateDir

    root = common.find_root(args)
    state = StateDir(root)  # the state checks every verb makes
    held = inventory(state.path, _policy(args), sandbox_place(root).path)
    if common.json_mode(args):
        common.emit_json({"version": "1", "root": str(root), "state": ".changeloop", **held})
    common.say(f".changeloop/ of {root}: {held['total']['files']} files, {_size(held['total'])}")
    for name, part in held["parts"].items():
        extra = ""
        if "perChange" in part:
            extra = "; " + ", ".join(f"{c}: {n}" for c, n in part["perChange"].items())
        if "unused" in part:
            extra = f"; {part['unused']} unused past the policy"
        common.say(f"  {name}: {part['files']} files, {_size(part)}{extra}")
    boxes = held.get("sandboxes")
    if boxes and boxes["files"]:
        common.say(f"  sandboxes ({boxes['path']}): {boxes['files']} files, {_size(boxes)}")
    policy = held["policy"]
    common.say(
        f"policy: {policy['keepRuns']} runs per change, cache entries unused"
        f" {policy['cacheDays']:g} days; free them with `changeloop state prune`"
    )
    return 0


def prune_now(args: argparse.Namespace) -> int:
    from changeloop.process.sweep import sweep
    from changeloop.workspace.prune import Freed, prune_cache, prune_runs
    from changeloop.workspace.state import StateDir

    root = common.find_root(args)
    state = StateDir(root)
    policy = _policy(args)
    swept = sweep(state.path)  # what killed runs left: processes, temp files, sandboxes
    freed = Freed()
    freed.add(prune_runs(state.path, None, policy, count=True))
    freed.add(prune_cache(state.path, policy))
    if common.json_mode(args):
        common.emit_json(
            {
                "version": "1",
                "root": str(root),
                "removed": {
                    "runs": freed.runs,
                    "cache": freed.cache,
                    "leftovers": [str(p) for p in swept.removed],
                },
                "freed": {"files": freed.files, "bytes": freed.bytes},
                "policy": policy.to_json(),
            }
        )
    common.say(
        f"removed {len(freed.runs)} run(s), {len(freed.cache)} cache entr"
        f"{'y' if len(freed.cache) == 1 else 'ies'} and {len(swept.removed)} leftover(s) of"
        f" killed runs: {freed.files} files, {_size({'bytes': freed.bytes})} freed"
    )
    return 0


def _size(part: dict[str, Any]) -> str:
    size = float(part["bytes"])
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "bytes" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} GiB"  # pragma: no cover - the loop returns

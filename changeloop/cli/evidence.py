"""``changeloop evidence detect|init|doctor <change>``: from zero to wiring without hand-writing it.

detect reads manifests and executes nothing; init previews (``--write``
writes) high-confidence derived providers into execution.yaml; doctor
explains what stays unresolved, with a pasteable command for each.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from changeloop.cli import common, help_examples

if TYPE_CHECKING:
    from changeloop.cli.boundary import Said

SUB_VERBS = ("detect", "init", "doctor")


def register(sub: Any) -> None:
    parser = sub.add_parser(
        "evidence",
        help="detect test frameworks, derive wiring (init), explain gaps (doctor)",
        description="Bootstrap a change's wiring from the repositories' own manifests.",
        **help_examples.ending("evidence"),
    )
    common.add_common(parser)
    verbs = parser.add_subparsers(dest="evidence_verb", metavar="SUBVERB")
    verbs.required = True
    helps = {
        "detect": "report each repository's test frameworks and where they were found",
        "init": "preview the execution.yaml derived wiring would write (--write writes it)",
        "doctor": "explain everything unresolved; exit 1 when something is",
    }
    for name in SUB_VERBS:
        p = verbs.add_parser(
            name,
            help=helps[name],
            description=helps[name],
            **help_examples.ending(f"evidence {name}"),
        )
        p.add_argument("change", help="change id (openspec/changes/<id>)")
        common.add_common(p)
        if name == "init":
            p.add_argument(
                "--write",
                action="store_true",
                help="write high-confidence providers into execution.yaml (default: preview)",
            )
        p.set_defaults(func=run)
    parser.set_defaults(func=run)


def empty(said: Said) -> dict[str, Any]:
    """The ``--json`` document of a refused or interrupted ``evidence`` sub-verb
    (``root`` is filled in by the boundary once the workspace was found)."""
    base: dict[str, Any] = {"version": "1", "change": said.value("change")}
    if said.sub == "doctor":
        base.update({"findings": [], "unresolved": 0})
    elif said.sub == "init":
        base.update({"written": False, "added": [], "unresolved": []})
    else:
        base.update({"repositories": {}, "unreadable": {}})
    return base


def run(args: argparse.Namespace) -> int:
    from changeloop.detect.context import load_context
    from changeloop.workspace import discovery as workspace

    verb = getattr(args, "evidence_verb", "detect")
    root = common.find_root(args)
    change = workspace.find_change(root, args.change)
    ctx = load_context(root, change)
    if verb == "detect":
        return _detect(args, ctx)
    if verb == "init":
        return _init(args, ctx)
    return _doctor(args, ctx)


def _rel(root: Path, path: Path) -> str:
    try:
        return path.relative_to(root).as_posix() or "."
    except ValueError:
        return str(path)


def _detect(args: argparse.Namespace, ctx: Any) -> int:
    if common.json_mode(args):
        common.emit_json(
            {
                "version": "1",
                "root": str(ctx.root),
                "change": ctx.change.id,
                "repositories": {
                    name: [d.to_json() for d in dets] for name, dets in ctx.detections.items()
                },
                # Directories the source scan could not open (skipped, not fatal).
                "unreadable": {name: list(paths) for name, paths in ctx.unreadable.items()},
            }
        )
        return 0
    from changeloop.text import repository_words

    common.say(f"change {ctx.change.id}: detected test frameworks (nothing was executed)")
    for name, dets in ctx.detections.items():
        repo = ctx.repositories[name]
        common.say(f"\n{repository_words(name)} ({repo.relpath})")
        if not dets:
            common.say("  no test framework declared or installed")
        for d in dets:
            version = f" {d.version}" if d.version else ""
            common.say(
                f"  {d.test_type:<10} {d.adapter}{version}  [{d.detection_source}] {d.evidence}"
            )
        for path in ctx.unreadable.get(name, ()):
            common.say(f"  skipped {path}/ (cannot be read; nothing in it was scanned)")
    change = ctx.change.id
    common.next_steps(
        [
            (common.command("evidence", "init", change), "preview the derived wiring"),
            (common.command("evidence", "init", change, "--write"), "write it to execution.yaml"),
            (common.command("evidence", "doctor", change), "explain what stays unresolved"),
        ]
    )
    return 0


def _init(args: argparse.Namespace, ctx: Any) -> int:
    from changeloop.detect.context import derived_explained
    from changeloop.detect.coverage import effective, unresolved
    from changeloop.detect.derive import required
    from changeloop.detect.init_writer import plan_init, write_atomic
    from changeloop.detect.playbook import change_dir, suggest

    derived = derived_explained(ctx)
    result = plan_init(ctx, derived)
    write = bool(getattr(args, "write", False))
    if write and result.added:
        write_atomic(result.path, result.after)
    # what stays unresolved once the written providers (and execution.yaml) are in place
    configured = dict(ctx.execution.providers) if ctx.execution else {}
    written = {n: derived[n][0] for n in result.added}
    gaps = unresolved(
        required(ctx.evidence, ctx.repositories),
        ctx.repositories,
        effective(configured, written).values(),
    )
    cdir = change_dir(ctx.root, ctx.change.path)
    has_execution = ctx.execution is not None or (write and bool(result.added))
    open_items: list[dict[str, Any]] = []
    for cap, repo in gaps:
        if repo not in ctx.repositories:
            continue
        hint = suggest(
            cap,
            ctx.repositories[repo],
            ctx.change.id,
            cdir,
            has_execution=has_execution,
            lone=len(ctx.repositories) == 1,
        )
        item: dict[str, Any] = {"capability": cap, "repository": repo, "next": hint.command}
        if hint.edit is not None:
            item["edit"] = hint.edit.to_json()
        item["action"] = hint.action
        open_items.append(item)
    markers = _marker_registrations(ctx, {n: p for n, (p, _) in derived.items()})
    if common.json_mode(args):
        common.emit_json(
            {
                "version": "1",
                "root": str(ctx.root),
                "change": ctx.change.id,
                "markerRegistration": markers,
                "path": _rel(ctx.root, result.path),
                "written": write and bool(result.added),
                "added": list(result.added),
                "skipped": [
                    {"provider": n, "reason": f"low confidence ({why})"}
                    for n, why in result.skipped_low
                ],
                "unresolved": open_items,
                "diff": result.diff,
            }
        )
    else:
        _init_human(ctx, result, write, open_items, markers)
    return 0


def _marker_registrations(ctx: Any, derived: dict[str, Any]) -> list[dict[str, str]]:
    """Per repository whose tests run under pytest: the lines that register ``claim``."""
    from changeloop.citing import framework_of
    from changeloop.detect.coverage import effective
    from changeloop.detect.doctor.citations import marker_registration

    configured = dict(ctx.execution.providers) if ctx.execution else {}
    out: dict[str, dict[str, str]] = {}
    for provider in effective(configured, derived).values():
        if framework_of(provider.adapter, provider.command or (), provider.format) != "pytest":
            continue
        name = provider.repository or next(iter(ctx.repositories), None)
        repo = ctx.repositories.get(name) if name else None
        found = marker_registration(repo) if repo is not None else None
        if repo is not None and found is not None and repo.name not in out:
            out[repo.name] = {"repository": repo.name, "file": found[0], "lines": found[1]}
    return list(out.values())


def _init_human(
    ctx: Any,
    result: Any,
    write: bool,
    open_items: list[dict[str, Any]],
    markers: list[dict[str, str]],
) -> None:
    from changeloop.text import repository_words

    shown = common.shown(result.path)  # from here, as every path a person reads
    if not result.added:
        configured = bool(ctx.execution and ctx.execution.providers)
        if result.kept and configured:
            common.say(f"{shown}: nothing to add (existing providers kept as they are)")
        elif result.kept or result.skipped_low:
            common.say(f"{shown}: nothing written (no derived provider is certain enough)")
        else:
            common.say(f"{shown}: nothing to add (nothing here could be derived)")
    elif write:
        common.say(f"wrote {shown}: added {', '.join(result.added)}")
    else:
        common.say(f"preview of {shown} (nothing written; add --write to write it):\n")
        common.say(result.diff.rstrip("\n"))
    for name, why in result.skipped_low:
        common.say(
            f"not written (low confidence, from {why}): {name} — prove still uses it; "
            "declare the framework in a manifest to make it high-confidence"
        )
    if open_items:
        common.say("\nstill unresolved:")
        for item in open_items:
            where = repository_words(item["repository"])
            common.say(f"  {item['capability']} in {where}: {item['action']}")
            if item["next"]:
                common.say(f"    run: {common.from_root(item['next'])}")
            if item.get("edit"):
                common.say(f"    add to {item['edit']['path']}:")
                common.say(_indent(item["edit"]["add"], "      "))
    for item in markers:
        common.say(
            f"\nso {item['repository']}'s own `pytest` (without changeloop) accepts "
            f"@pytest.mark.claim, register the marker in {item['file']} (not written: "
            f"changeloop never edits your configuration):\n{item['lines']}"
        )
    change = ctx.change.id
    steps: list[common.Step] = []
    if not write and result.added:
        steps.append((common.command("evidence", "init", change, "--write"), "write it"))
    steps.extend((common.from_root(item["next"]), None) for item in open_items if item["next"])
    steps.append(
        (common.command("evidence", "doctor", change), "what stands between it and a proof")
    )
    if not open_items:
        steps.append((common.command("prove", change), "run it and write receipts"))
    common.next_steps(steps)


def _indent(text: str, prefix: str) -> str:
    return "\n".join(prefix + line for line in text.rstrip("\n").splitlines())


def _preflight(ctx: Any, derived: dict[str, Any]) -> list[Any]:
    """What prove's preflight would refuse, on the plan prove would build (docs/bootstrap.md).

    Derived wiring joins the plan only where prove lets it (``derivation_possible``,
    as in ``cli/prove_plan.load_plan``).
    """
    from changeloop.detect.derive import derivation_possible
    from changeloop.detect.doctor.preflight import preflight_findings

    possible = derivation_possible(ctx.evidence, ctx.execution, ctx.repositories)
    return preflight_findings(
        ctx.root, ctx.change, ctx.evidence, ctx.execution, derived if possible else {}
    )


def doctor_findings(ctx: Any) -> list[Any]:
    """Everything ``evidence doctor`` reports for the change of ``ctx``."""
    from changeloop.detect.context import derived_explained
    from changeloop.detect.doctor import diagnose

    derived = {name: provider for name, (provider, _) in derived_explained(ctx).items()}
    return diagnose(ctx, derived) + _preflight(ctx, derived)


def unresolved_count(root: Path, change: Any) -> int:
    """How many unresolved findings doctor would report (0 when it cannot look)."""
    from changeloop.detect.context import load_context
    from changeloop.errors import ChangeloopError

    try:
        findings = doctor_findings(load_context(root, change))
    except (ChangeloopError, OSError):
        return 0  # doctor would refuse the change itself; prove already said why
    return sum(1 for f in findings if f.severity == "error")


def _doctor(args: argparse.Namespace, ctx: Any) -> int:
    from changeloop.detect.context import derived_explained
    from changeloop.detect.doctor import next_steps

    findings = doctor_findings(ctx)
    count = sum(1 for f in findings if f.severity == "error")
    if common.json_mode(args):
        from changeloop.detect.doctor.versions import with_versions

        configured = list(ctx.execution.providers.values()) if ctx.execution else []
        derived = [provider for provider, _ in derived_explained(ctx).values()]
        detections = with_versions(ctx.detections, ctx.repositories, [*configured, *derived])
        common.emit_json(
            {
                "version": "1",
                "root": str(ctx.root),
                "change": ctx.change.id,
                "findings": [f.to_json() for f in findings],
                "unresolved": count,
                "detections": {
                    name: [d.to_json() for d in dets] for name, dets in detections.items()
                },
            }
        )
    else:
        if not findings:
            common.say(f"change {ctx.change.id}: every required capability has a provider")
        for f in findings:
            common.say(f"[{f.kind}] {f.message}")
            action = f.suggested_action.replace("\n", "\n      ")
            common.say(f"  do: {action}")
            if f.playbook_command:
                common.say(f"  run: {common.from_root(f.playbook_command)}")
            if f.edit is not None:
                common.say(f"  add to {f.edit.path}:")
                common.say(_indent(f.edit.add, "    "))
        common.say(f"\n{count} unresolved")
        common.say("\nNext steps:")
        from changeloop.detect.init_writer import plan_init

        pending = bool(plan_init(ctx, derived_explained(ctx)).added)  # nothing left to write?
        for step in next_steps(ctx, findings, init_pending=pending):
            common.say(f"  {common.from_root(step)}")
    return 1 if count else 0

"""Loading a change's plan for ``prove`` (and the verbs that read one), and ``prove --dry-run``.

``load_plan`` is the one road from the command line to a preflighted ``Plan``:
root, change, configuration, derived wiring, then every refusal of preflight.
``dry_run`` shows that plan without running anything. Imports stay inside the
functions: a re-prove answered from its record never loads a plan.
"""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING, Any

from changeloop.cli import common
from changeloop.errors import ChangeloopError

if TYPE_CHECKING:
    import argparse
    from pathlib import Path

    from changeloop.model import Plan, Provider


def load_plan(args: argparse.Namespace) -> Plan:
    """Root, change, configuration, derived wiring, preflight — or a ChangeloopError.

    The root is remembered as soon as it is found (``common.find_root``), so a
    refusal's document still says what it was about.
    """
    from changeloop import preflight
    from changeloop.config.validation_memo import validated_memo
    from changeloop.detect.context import derived_explained, load_context
    from changeloop.detect.derive import derivation_possible
    from changeloop.plan import build_plan
    from changeloop.workspace import discovery as workspace

    root = common.find_root(args)
    change = workspace.find_change(root, args.change)
    with validated_memo(_checked_state(root)):
        context = load_context(root, change, only_if_derivable=True)
    derived = {}
    derivable = context.derivable  # asked once, by load_context
    if derivable is None:
        derivable = derivation_possible(context.evidence, context.execution, context.repositories)
    if derivable:
        derived = {name: p for name, (p, _) in derived_explained(context).items()}
    plan = build_plan(root, change, derived=derived, config=(context.evidence, context.execution))
    preflight.enforce(plan)
    for warning in preflight.warnings(plan):
        common.say(warning)
    return plan


def _checked_state(root: Path) -> Path | None:
    """``.changeloop/`` when ``state.check_state`` accepts it, else None (a state the
    run will refuse is never read; the refusal itself comes where it always did)."""
    from changeloop.workspace.state import STATE, check_state

    try:
        check_state(root)
    except ChangeloopError:
        return None
    return root / STATE


def _effective(provider: Provider) -> list[str] | None:
    """The argv the provider's adapter runs (its command with what the adapter adds)."""
    command = provider.facts.command if provider.facts is not None else provider.command
    return list(command) if command else None


def dry_run(args: argparse.Namespace, plan: Plan) -> int:
    from changeloop.fingerprints.wiring import wiring_digest
    from changeloop.scheduling.graph import topological_order

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
            # what runs: the command with what the adapter adds (e.g. Playwright's reporter)
            "effectiveCommand": _effective(p),
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
    count = f"{len(providers)} provider{'' if len(providers) == 1 else 's'}"
    common.say(f"plan for change {plan.change.id} ({count})")
    for p in plan.providers.values():
        deps = f" after {', '.join(p.depends_on)}" if p.depends_on else ""
        common.say(
            f"  {p.name}: {p.adapter} → {p.capability} in {p.repository or '-'}"
            f" [{', '.join(p.resources)}]{deps}"
        )
        effective = _effective(p)
        if effective:
            common.say(f"      $ {shlex.join(effective)}")
        for claim, count in _mutants(plan, p).get("mutants", {}).items():
            shown = "unknown until a traced run exists" if count is None else str(count)
            common.say(f"      mutants for {claim}: {shown}")
    common.say(f"order: {' → '.join(order)}")
    common.say("\nNext steps:\n  changeloop prove " + plan.change.id)
    return 0


def _mutants(plan: Plan, provider: Any) -> dict[str, Any]:
    """docs/grounding.md: a mutation provider's mutant count per claim, from the last traced run."""
    if provider.adapter != "mutation":
        return {}
    from changeloop.providers.mutation import dry_run_counts

    return {"mutants": dry_run_counts(plan, provider)}

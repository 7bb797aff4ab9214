"""``changeloop gate <change>``: are the change's existing receipts still proof? Runs nothing.

Exit 0 only when the latest receipts, re-verified against the current content
and wiring, prove the change; 1 when they do not (per claim, why); 2 when the
change or its configuration is refused. An OpenSpec archive hook or a merge
check calls this (docs/verbs/gate.md).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from changeloop.cli import common, help_examples, trust_flags

if TYPE_CHECKING:
    from changeloop.cli.boundary import Said


def register(sub: Any) -> None:
    parser = sub.add_parser(
        "gate",
        help="re-verify the change's receipts against current content and wiring (runs nothing)",
        description=(
            "Exit 0 only when the change's latest receipts (.changeloop/receipts/<change>/ and\n"
            "openspec/changes/<change>/receipts/) still prove it for the current content and\n"
            "wiring; 1 otherwise, naming per claim why; 2 when the change is refused.\n"
            "Nothing runs: use it as an OpenSpec archive hook or a merge check."
        ),
        **help_examples.ending("gate"),
    )
    parser.add_argument(
        "change", metavar="CHANGE", help="change id (openspec/changes/<id>/, archived ones too)"
    )
    common.add_public_keys(
        parser,
        "also trust receipts signed by this Ed25519 public key (repeatable), e.g. the key "
        "`prove --sign-key` used",
    )
    trust_flags.add(parser)
    common.add_common(parser)
    parser.set_defaults(func=run)


def empty(said: Said) -> dict[str, Any]:
    """The ``--json`` document of a refused or interrupted ``gate``."""
    return {"version": "1", "change": said.value("change"), "status": "not-proven", "claims": {}}


def run(args: argparse.Namespace) -> int:
    from changeloop.cli.prove.plan import load_plan
    from changeloop.gate import evaluate
    from changeloop.process.sweep import sweep_before_answering
    from changeloop.run.current import current_fingerprints

    plan, trust = trust_flags.trusted(args, load_plan(args))
    sweep_before_answering(plan.root)  # what a killed run left ends before the answer
    result = evaluate(plan, trust.command_line, fingerprint=current_fingerprints(plan))
    if common.json_mode(args):
        doc = {**result.to_json(), "trust": trust.to_json(), "findings": trust.findings()}
        common.emit_json(doc)
    common.say(f"change {plan.change.id}: {'PROVEN' if result.proven else 'NOT PROVEN'}")
    trust_flags.say(trust)
    said = set()
    for cid, claim in result.claims.items():
        common.say(f"  claim {cid}: {claim.status}")
        for reason in claim.reasons:
            common.say(f"    {reason.code}: {reason.message}")
            said.add(reason)
    for reason in result.reasons:  # a reason already said under a claim is not repeated
        if reason not in said:
            common.say(f"  {reason.code}: {reason.message}")
            said.add(reason)
    if not result.read:
        common.say(f"  no receipt found: run `{common.command('prove', plan.change.id)}` first")
    unverified = any(
        r.code == "unverified" for c in result.claims.values() for r in c.reasons
    ) or any(r.code == "unverified" for r in result.reasons)
    common.next_steps(gate_steps(plan, result.proven, args.public_key, unverified=unverified))
    return 0 if result.proven else 1


def gate_steps(
    plan: Any, proven: bool, public_keys: list[Path], *, unverified: bool = False
) -> list[common.Step]:
    """What fits now: prove; or carry the evidence into the change, then archive it; or, for
    an archived change, read its report."""
    from changeloop.cli.carry import SUMMARY_NAME, receipts_dir

    change = plan.change.id
    pub = [w for p in public_keys for w in ("--public-key", common.shown(p))]
    key = next(
        (p.with_suffix(".key") for p in public_keys if p.with_suffix(".key").is_file()), None
    )
    sign = ["--sign-key", common.shown(key) if key is not None else "KEY"]
    if not proven:
        steps: list[common.Step] = []
        if unverified:
            why = "the public half of the key that signed the receipts, if you trust it"
            steps.append((common.command("gate", change, "--public-key", "KEY.pub"), why))
        prove = common.command("prove", change, *(sign if key is not None else []))
        return [*steps, (prove, "or prove again here")] if steps else [(prove, None)]
    if plan.change.archived:
        return [(common.command("report", change, *pub), "the archived change's evidence, checked")]
    steps = []
    if not (receipts_dir(plan) / SUMMARY_NAME).is_file():
        why = "the signed summary and its receipts travel with the change"
        if key is None:
            why += " (KEY: the key prove signed with)"
        steps.append((common.command("summary", change, *sign, "--into-change"), why))
    steps.append((f"openspec archive {change}", "still proven for this content"))
    return steps

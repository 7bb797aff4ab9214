"""``changeloop receipt sign``: a receipt for work changeloop did not run.

Example::

    changeloop receipt sign --change add-login --claims login --key ci.pem \\
        --issuer github-actions --url https://ci.example/run/7 --out ci.json

The receipt is bound to the current content (gitTree, ``openspec/`` left out) of
every repository of the change, as ``prove --sandbox`` would see it. It carries no
wiring digest: no wiring ran. An ``external`` provider trusting the key's public
half accepts it for its own capability and that content only (docs/adapters).
"""

from __future__ import annotations

import argparse
import sys
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from changeloop.cli import common

if TYPE_CHECKING:
    from changeloop.model import Plan


def run_sign(args: argparse.Namespace) -> int:
    from changeloop.cli.argtypes import refuse_out_file
    from changeloop.git.identity import content_identity
    from changeloop.model import ClaimMark
    from changeloop.outcome import Observer, Outcome
    from changeloop.plan import build_plan
    from changeloop.signing.jcs import canonicalize
    from changeloop.signing.keys import load_private_key
    from changeloop.signing.statement import (
        SIGNED_ADAPTER,
        ReceiptFacts,
        build_statement,
        configuration_digests,
        seal,
        sha256_hex,
        write_atomic,
    )
    from changeloop.workspace import discovery as workspace

    refuse_out_file("--out", args.out)
    key = load_private_key(args.key)
    claims = [c.strip() for c in args.claims.split(",") if c.strip()]
    if args.status == "fail" and not args.reason:
        args.reason = f"{args.issuer} signed this off as failing"
    root = common.find_root(args)
    change = workspace.find_change(root, args.change)
    plan = build_plan(root, change)
    _check_claims(plan, claims, args.claims)
    externals = {p.name: p.capability for p in plan.providers.values() if p.adapter == "external"}
    if externals and args.capability not in externals.values():
        listed = ", ".join(f"{n} ({c})" for n, c in sorted(externals.items()))
        common.say(
            f"warning: no external provider of change {change.id} has capability"
            f" {args.capability!r}, so its prove will ignore this sign-off (a sign-off counts"
            f" only for an external provider's own capability; they are: {listed})"
        )
    subjects = {
        name: content_identity(repo.path, include_untracked=args.sandbox != "worktree")
        for name, repo in sorted(plan.repositories.items())
    }
    provider = args.provider or args.capability
    binding = {
        "change": change.id,
        "provider": provider,
        "capability": args.capability,
        "claims": sorted(claims),
        "trees": {name: ident.tree for name, ident in subjects.items()},
    }
    now = datetime.now(UTC)
    mark: ClaimMark = "credited" if args.status == "pass" else "failed"
    outcome = Outcome(
        capability=args.capability,
        status=args.status,
        reason=args.reason if args.status != "pass" else None,
        claims={c: mark for c in claims},
        observer=Observer(adapter=SIGNED_ADAPTER, tool="changeloop receipt sign"),
        url=args.url,
    )
    facts = ReceiptFacts(
        change=change.id,
        provider=provider,
        adapter=SIGNED_ADAPTER,  # a sign-off: no wiring ran, so `wiring` stays null
        fingerprint="sha256:" + sha256_hex(canonicalize(binding)),
        subjects=subjects,
        sandbox=args.sandbox,
        issuer=args.issuer,
        started=now,
        finished=now,
        configuration=configuration_digests(plan, None),
        url=args.url,
    )
    sealed = seal(build_statement(facts, outcome), key)
    trees = ", ".join(f"{n} {i.tree[:7]}…" for n, i in subjects.items())
    if args.out is None:
        sys.stdout.buffer.write(sealed.envelope)
        sys.stdout.flush()
    else:
        write_atomic(args.out, sealed.envelope)
        if common.json_mode(args):
            common.emit_json(
                {
                    "version": "1",
                    "id": sealed.id,
                    "path": str(args.out),
                    "keyid": sealed.keyid,
                    "subjects": binding["trees"],
                }
            )
    common.say(f"signed {sealed.id} for change {change.id} ({args.status}; content {trees})")
    return 0


def _check_claims(plan: Plan, claims: list[str], given: str) -> None:
    """Warn (and still sign) when ``--claims`` names claims the change's evidence.yaml does
    not declare, or none where it declares some: such a receipt credits nothing here.

    Not a refusal: a signer may sign what it attests (a receipt for another revision
    of evidence.yaml, or one a verifier must refuse, as a test of that verifier);
    whoever reads it binds it to the claims (the verification order, docs/receipts.md).
    """
    declared = sorted(plan.evidence.claims)
    unknown = [c for c in claims if c not in plan.evidence.claims]
    if not unknown and (claims or not declared):
        return
    known = ", ".join(declared) if declared else "none: the change declares no claims"
    if unknown:
        names = ", ".join(repr(c) for c in unknown)
        what = f"--claims names {names}, not a claim of change {plan.change.id}"
    else:
        what = f"--claims {given!r} names no claim of change {plan.change.id}"
    common.say(f"warning: {what}; the receipt credits no such claim here (declared: {known})")

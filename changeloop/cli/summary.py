"""``changeloop summary <change> --sign-key KEY``: one signed SLSA VSA over the change.

It runs nothing: it asks :mod:`changeloop.gate` what the change's receipts
prove now and signs that as a Verification Summary Attestation
(``https://slsa.dev/verification_summary/v1``), for either verdict. Exit 0 when
the result is PASSED, 1 when FAILED, 2 when refused. ``receipt verify`` checks
the file it writes (:func:`verify_command`).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from changeloop.cli import common, help_examples

if TYPE_CHECKING:
    from changeloop.cli.boundary import Said


def register(sub: Any) -> None:
    parser = sub.add_parser(
        "summary",
        help="sign an SLSA verification summary (VSA) of what the change's receipts prove",
        description=(
            "Re-verify the change's receipts as `gate` does and write one DSSE-signed SLSA\n"
            "Verification Summary Attestation: subjects = the repositories' content trees,\n"
            "policy = evidence.yaml's digest, inputAttestations = every receipt read.\n"
            "Exit 0 when PASSED, 1 when FAILED (the VSA is written either way), 2 when refused."
        ),
        **help_examples.ending("summary"),
    )
    parser.add_argument("change", metavar="CHANGE")
    parser.add_argument(
        "--sign-key",
        required=True,
        type=Path,
        metavar="KEY",
        help="Ed25519 private key (PKCS#8 PEM, e.g. from `changeloop keygen`)",
    )
    parser.add_argument(
        "--out", type=Path, metavar="FILE", help="write the envelope here (default: stdout)"
    )
    common.add_public_keys(
        parser,
        "also trust receipts signed by this public key (repeatable)",
    )
    common.add_common(parser)
    parser.set_defaults(func=run)


def empty(said: Said) -> dict[str, Any]:
    """The ``--json`` document of a refused or interrupted ``summary``."""
    return {"version": "1", "change": said.value("change"), "verificationResult": None}


def run(args: argparse.Namespace) -> int:
    from changeloop import __version__
    from changeloop.cli.argtypes import refuse_out_file
    from changeloop.cli.prove.plan import load_plan
    from changeloop.gate import evaluate
    from changeloop.gate.vsa import build_vsa, seal_vsa
    from changeloop.signing.keys import load_private_key, load_public_key_file
    from changeloop.signing.statement import write_atomic

    refuse_out_file("--out", args.out)
    key = load_private_key(args.sign_key)
    keys = [load_public_key_file(p) for p in args.public_key]
    plan = load_plan(args)
    result = evaluate(plan, keys)
    statement = build_vsa(result, version=__version__)
    sealed = seal_vsa(statement, key)
    verdict = statement["predicate"]["verificationResult"]
    if args.out is not None:
        write_atomic(args.out, sealed.envelope)
    doc = {
        "version": "1",
        "change": plan.change.id,
        "verificationResult": verdict,
        "id": sealed.id,
        "keyid": sealed.keyid,
        "path": str(args.out) if args.out is not None else None,
        "inputAttestations": len(statement["predicate"]["inputAttestations"]),
    }
    if common.json_mode(args):
        if args.out is None:
            doc["envelope"] = json.loads(sealed.envelope)
        common.emit_json(doc)
    elif args.out is None:
        sys.stdout.buffer.write(sealed.envelope)
        sys.stdout.flush()
    where = f" → {args.out}" if args.out is not None else ""
    common.say(
        f"summary of change {plan.change.id}: {verdict} ({doc['inputAttestations']} receipt(s) "
        f"read){where}"
    )
    for cid, claim in result.claims.items():
        if claim.status != "proven":
            common.say(f"  claim {cid}: {claim.status}")
    _next_steps(plan.change.id, verdict, args.out, args.sign_key)
    return 0 if verdict == "PASSED" else 1


def _next_steps(change: str, verdict: str, out: Path | None, key: Path) -> None:
    """What to do with the summary (stderr, as every human line: stdout may hold the envelope)."""
    common.say("\nNext steps:")
    if verdict == "PASSED":
        target = str(out) if out is not None else "<file>"
        public = key.with_suffix(".pub")  # where `changeloop keygen` puts it
        pub = str(public) if public.is_file() else "<its public key>"
        common.say(f"  changeloop receipt verify {target} --public-key {pub} --change {change}")
    else:
        common.say(f"  changeloop prove {change}     # prove what is not proven, then")
        common.say(f"  changeloop summary {change}   # sign the summary again")

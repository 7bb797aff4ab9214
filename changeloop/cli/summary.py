"""``changeloop summary <change> --sign-key KEY``: one signed SLSA VSA over the change.

It runs nothing: it asks :mod:`changeloop.gate` what the change's receipts
prove now and signs that as a Verification Summary Attestation
(``https://slsa.dev/verification_summary/v1``), for either verdict. Exit 0 when
the result is PASSED, 1 when FAILED, 2 when refused. ``receipt verify`` checks
the file it writes (:func:`verify_command`).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from changeloop.cli import common, help_examples, trust_flags
from changeloop.errors import ChangeloopError, Problem

if TYPE_CHECKING:
    from changeloop.cli.boundary import Said


def register(sub: Any) -> None:
    parser = sub.add_parser(
        "summary",
        help="sign an SLSA verification summary (VSA) of what the change's receipts prove",
        description=(
            "Re-verify the change's receipts as `gate` does and write one DSSE-signed SLSA\n"
            "Verification Summary Attestation: subjects = the repositories' content trees,\n"
            "policy = the digests of evidence.yaml and execution.yaml and the trust they were\n"
            "judged under, inputAttestations = the receipts the verdict weighed.\n"
            "Exit 0 when PASSED, 1 when FAILED (the VSA is written either way), 2 when refused."
        ),
        **help_examples.ending("summary"),
    )
    parser.add_argument(
        "change", metavar="CHANGE", help="change id (openspec/changes/<id>/, archived ones too)"
    )
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
    parser.add_argument(
        "--into-change",
        action="store_true",
        help="before archiving: copy the receipts it weighs (signed with --sign-key) into "
        "openspec/changes/<id>/receipts/ and write the summary there as summary.intoto.jsonl, "
        "so the change carries its evidence into git and the archive",
    )
    common.add_public_keys(
        parser,
        "also trust receipts signed by this public key (repeatable)",
    )
    trust_flags.add(parser)
    common.add_common(parser)
    parser.set_defaults(func=run)


def empty(said: Said) -> dict[str, Any]:
    """The ``--json`` document of a refused or interrupted ``summary``."""
    return {"version": "1", "change": said.value("change"), "verificationResult": None}


def run(args: argparse.Namespace) -> int:
    from changeloop import __version__
    from changeloop.cli.argtypes import refuse_out_file
    from changeloop.cli.carry import SUMMARY_NAME, carry_receipts, receipts_dir
    from changeloop.cli.prove.plan import load_plan
    from changeloop.gate import evaluate
    from changeloop.gate.vsa import EXTENSION, build_vsa, seal_vsa
    from changeloop.run.current import current_fingerprints
    from changeloop.signing.keys import load_private_key
    from changeloop.signing.statement import write_atomic

    refuse_out_file("--out", args.out)
    if args.into_change and args.out is not None:
        raise ChangeloopError(
            Problem(
                code="usage",
                message="--into-change writes the summary into the change's receipts/; "
                "--out names another place",
                fix="give one of them",
            )
        )
    key = load_private_key(args.sign_key)
    plan, trust = trust_flags.trusted(args, load_plan(args))
    # With this checkout's trust (no trust on the command line), the signer's own public half
    # vouches too, as --public-key would: receipts `prove --sign-key` made with the same key
    # are read. A trust the command line names is the whole trust, as it is for gate.
    if trust.source == "checkout":
        trust = dataclasses.replace(trust, command_line=(*trust.command_line, key.public_key()))
    result = evaluate(plan, trust.command_line, fingerprint=current_fingerprints(plan))
    copied: list[Path] = []
    out = args.out
    if args.into_change:
        copied = carry_receipts(plan, result, key)
        out = receipts_dir(plan) / SUMMARY_NAME
        # What travels, judged alone: exactly what a fresh clone's gate will read.
        result = evaluate(
            plan, trust.command_line, local=[], fingerprint=current_fingerprints(plan)
        )
    statement = build_vsa(result, trust, version=__version__)
    sealed = seal_vsa(statement, key)
    verdict = statement["predicate"]["verificationResult"]
    if out is not None:
        write_atomic(out, sealed.envelope)
    doc = {
        "version": "1",
        "change": plan.change.id,
        "verificationResult": verdict,
        "id": sealed.id,
        "keyid": sealed.keyid,
        "path": _path(plan.root, out) if out is not None else None,
        "inputAttestations": len(statement["predicate"]["inputAttestations"]),
        "carried": [_path(plan.root, p) for p in copied],
        "setAside": len(statement["predicate"][EXTENSION]["setAside"]),
        "trust": trust.to_json(),
        "findings": trust.findings(),
    }
    if common.json_mode(args):
        if out is None:
            doc["envelope"] = json.loads(sealed.envelope)
        common.emit_json(doc)
    elif out is None:
        sys.stdout.buffer.write(sealed.envelope)
        sys.stdout.flush()
    where = f" → {common.shown(out)}" if out is not None else ""
    common.say(
        f"summary of change {plan.change.id}: {verdict} ({doc['inputAttestations']} receipt(s) "
        f"weighed, {doc['setAside']} set aside){where}"
    )
    if copied:
        common.say(f"  {len(copied)} receipt(s) copied into {common.shown(receipts_dir(plan))}")
    trust_flags.say(trust)
    for cid, claim in result.claims.items():
        if claim.status != "proven":
            common.say(f"  claim {cid}: {claim.status}")
    common.next_steps(_next_steps(plan, verdict, out, args.sign_key, into=args.into_change))
    return 0 if verdict == "PASSED" else 1


def _path(root: Path, path: Path) -> str:
    """A written file as the JSON names paths: relative to the workspace root when inside."""
    try:
        return path.absolute().relative_to(root.absolute()).as_posix()
    except ValueError:
        return str(path)


def _next_steps(
    plan: Any, verdict: str, out: Path | None, key: Path, *, into: bool
) -> list[common.Step]:
    """What to do with the summary (stderr, as every human line: stdout may hold the envelope)."""
    from changeloop.cli.carry import receipts_dir
    from changeloop.cli.prove.steps import public_key_words

    change = plan.change.id
    if verdict != "PASSED":
        return [
            (common.command("prove", change, "--sign-key", common.shown(key)), "prove what is not"),
            (common.command("summary", change, "--sign-key", common.shown(key)), "sign again"),
        ]
    target = common.shown(out) if out is not None else "FILE"
    pub = public_key_words(key)
    steps: list[common.Step] = [
        (common.command("receipt", "verify", target, *pub, "--change", change), "check it")
    ]
    if into and not plan.change.archived:
        folder = common.shown(receipts_dir(plan))
        steps.append((f"git add {folder} && git commit -m 'Evidence for {change}'", None))
        steps.append((f"openspec archive {change}", "the receipts move with the change"))
    return steps

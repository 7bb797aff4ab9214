"""The evidence that travels with a change: its receipts copied into the change's ``receipts/``.

Example::

    copied = carry_receipts(plan, gate_result, signing_key)   # [Path] written (by receipt id)

Before ``openspec archive`` moves a change into ``changes/archive/``, ``summary
--into-change`` copies the receipts the verdict weighed from the ignored
``.changeloop/`` into ``openspec/changes/<id>/receipts/`` (plain files, named by
receipt id, byte for byte), so the archived change in git holds proof a later
reader can check with the signing key's public half. Nothing there stales the
change: the content identity leaves ``openspec/`` out, and ``receipts/`` folders
are no input of any provider.

Only receipts signed by the key that signs the summary travel: one signed by the
workspace key (which never leaves this machine) could not be verified by anyone
else, so it is refused by name, with the command that fixes it.
"""

from __future__ import annotations

from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from changeloop.errors import ChangeloopError, Location, Problem
from changeloop.gate import GateResult
from changeloop.model import Plan

SUMMARY_NAME = "summary.intoto.jsonl"  # not *.json: gate and external read those as receipts


def receipts_dir(plan: Plan) -> Path:
    return plan.change.path / "receipts"


def carry_receipts(plan: Plan, result: GateResult, key: Ed25519PrivateKey) -> list[Path]:
    """Copy every weighed workspace receipt into the change's ``receipts/``; the paths written."""
    from changeloop.fsio import symlink_under, write_all
    from changeloop.signing.keys import keyid

    signer = keyid(key.public_key())
    local = [k for k in result.kept if k.envelope.source == "local"]
    foreign = [k for k in local if k.verified.keyid != signer]
    if foreign:
        names = ", ".join(k.envelope.uri for k in foreign[:3])
        raise ChangeloopError(
            Problem(
                code="receipts_not_signed_by_key",
                message=f"{names} {'is' if len(foreign) == 1 else 'are'} signed by another key "
                "(the workspace key, which nobody else holds): a reader of the archived change "
                "could not verify it",
                fix=f"prove with the same key first: `changeloop prove {plan.change.id} "
                "--sign-key KEY`, then `changeloop summary … --sign-key KEY --into-change`",
            ),
            exit_code=1,
        )
    target = receipts_dir(plan)
    link = symlink_under(target, plan.root)
    if link is not None or (target.exists() and not target.is_dir()):
        where = link or target
        raise ChangeloopError(
            Problem(
                code="receipts_not_a_directory",
                message=f"{where} is not a real directory; receipts are copied only into one",
                location=Location(str(where)),
                fix=f"replace {where} with a real directory, then run summary again",
            ),
            exit_code=1,
        )
    target.mkdir(parents=True, exist_ok=True)
    items = [
        (target / f"{k.verified.id.removeprefix('sha256:')}.json", k.envelope.path.read_bytes())
        for k in local
    ]
    write_all(items)  # write all, fsync all, rename all: never half a set
    return [path for path, _ in items]

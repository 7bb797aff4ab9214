"""``changeloop receipt verify``: the verification order of docs/receipts.md, first failure named.

Example::

    changeloop receipt verify ci.json --public-key ci.pub --change add-login --json

Exit 0 when valid, 1 when not (the failed check and its reason), 2 when the file
cannot be read. A ``changeloop summary`` VSA is handed to ``cli/summary.py``.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from changeloop.cli import common
from changeloop.cli.receipt.problems import check_failed, unreadable
from changeloop.errors import ChangeloopError
from changeloop.text import escape_controls

if TYPE_CHECKING:  # registering the verb imports no verification code (PLC0415)
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    from changeloop.signing.verify import VerificationError


def run_verify(args: argparse.Namespace) -> int:
    from changeloop.signing.dsse import read_envelope
    from changeloop.signing.keys import load_public_key_file
    from changeloop.signing.verify import Expectation, VerificationError, verify_envelope
    from changeloop.text import escape_controls as esc

    keys = [load_public_key_file(p) for p in args.public_key]
    doc: dict[str, Any] = {"version": "1", "file": str(args.file)}
    try:
        data = read_envelope(args.file)  # at most 4 MiB is ever read
        from changeloop.gate.vsa import claims_to_be_vsa

        if claims_to_be_vsa(data):  # a `changeloop summary` VSA
            return verify_command(args, data, keys)
        verified = verify_envelope(data, keys, Expectation(change=args.change))
    except OSError as exc:
        raise ChangeloopError(unreadable(exc, args.file), exit_code=2) from exc
    except VerificationError as exc:
        return answer_invalid(args, doc, exc)
    ext = verified.extension
    doc.update(
        valid=True,
        id=verified.id,
        keyid=verified.keyid,
        change=ext["change"],
        provider=ext["provider"],
        capability=ext["capability"],
        status=ext["status"],
        result=verified.result,
        issuer=ext["issuer"],
        claims=ext["claims"],
        finishedOn=ext["finishedOn"],
        subjects=verified.subjects,  # what the signature covers, not the extension's copy
    )
    if common.json_mode(args):
        common.emit_json(doc)
    common.say(
        f"valid: {verified.id} — change {esc(ext['change'])}, provider {esc(ext['provider'])},"
        f" capability {esc(ext['capability'])}, status {esc(ext['status'])},"
        f" issuer {esc(ext['issuer'])}"
    )
    return 0


def answer_invalid(args: argparse.Namespace, doc: dict[str, Any], exc: VerificationError) -> int:
    """The one "invalid" answer of ``receipt verify``, for a receipt and a summary alike (exit 1).

    ``doc`` is the kind's own document so far; the failed check, its reason and
    the Problem are added, and the line is printed with control characters escaped.
    """
    from changeloop.text import escape_controls

    problem = check_failed(exc, args.file)
    doc.update(valid=False, check=exc.check, reason=exc.reason, errors=[problem.to_json()])
    if common.json_mode(args):
        common.emit_json(doc)
    common.say(escape_controls(f"invalid: {args.file}: {exc.check} check failed: {exc.reason}"))
    return 1


def verify_command(args: argparse.Namespace, data: bytes, keys: list[Ed25519PublicKey]) -> int:
    """``receipt verify`` on a VSA: signature and shape, then its result (exit 0 valid)."""
    from changeloop.gate.vsa import VSA_TYPE, verify_vsa
    from changeloop.signing.dsse import VerificationError

    doc: dict[str, Any] = {"version": "1", "file": str(args.file), "predicateType": VSA_TYPE}
    try:
        verified = verify_vsa(data, keys)
        if args.change is not None and verified.change != args.change:
            raise VerificationError(
                "change", f"summary is for change {verified.change!r}, not {args.change!r}"
            )
    except VerificationError as exc:
        return answer_invalid(args, doc, exc)
    predicate = verified.predicate
    doc.update(
        valid=True,
        id=verified.id,
        keyid=verified.keyid,
        change=verified.change,
        verificationResult=verified.result,
        result=verified.result,
        verifier=predicate["verifier"]["id"],
        timeVerified=predicate["timeVerified"],
        resourceUri=predicate["resourceUri"],
        policy=predicate["policy"],
        trust=predicate["policy"]["annotations"]["trust"],
        inputAttestations=predicate["inputAttestations"],
        setAside=verified.set_aside,
        subjects=verified.subjects,
    )
    if common.json_mode(args):
        common.emit_json(doc)
    # Signed strings are quoted on one line: a line break in one stays escaped, so it
    # cannot print a line of its own (say() keeps the newlines of our own messages).
    signed_time = escape_controls(str(predicate["timeVerified"]))
    signed_by = escape_controls(str(predicate["verifier"]["id"]))
    common.say(
        f"valid: {verified.id} — verification summary of change {verified.change!r}: "
        f"{verified.result} ({len(predicate['inputAttestations'])} receipt(s) weighed, "
        f"verified {signed_time} by {signed_by})"
    )
    source = escape_controls(str(predicate["policy"]["annotations"]["trust"]["source"]))
    common.say(f"  judged with trust from: {source}")
    return 0

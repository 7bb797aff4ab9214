"""``changeloop receipt sign|verify|import``: receipts for work changeloop did not run.

- ``sign`` issues a receipt bound to the current content of the change's
  repositories (a reviewer's sign-off, a CI job of another tool);
- ``verify`` runs the verification order of DESIGN.md §2.3 and names the first
  failed check (exit 0 valid, 1 invalid);
- ``import`` copies envelopes into ``openspec/changes/<id>/receipts/`` after
  verifying them with the keys the change's ``external`` providers name (plus
  ``--public-key``); one refusal copies nothing.
"""

from __future__ import annotations

import argparse
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from changeloop.cli import common
from changeloop.errors import ChangeloopError, Location, Problem


def register(sub: Any) -> None:
    parser = sub.add_parser(
        "receipt",
        help="sign, verify or import receipts",
        description="Sign, verify or import DSSE receipts (in-toto statements, Ed25519).",
    )
    common.add_common(parser)
    verbs = parser.add_subparsers(dest="receipt_verb", metavar="ACTION")
    verbs.required = True

    sign = verbs.add_parser(
        "sign",
        help="issue a receipt for work changeloop did not run (review, another CI tool)",
        description=(
            "Sign a receipt bound to the current content (gitTree, openspec/ left out) of\n"
            "every repository of the change. A local `external` provider trusting --key's\n"
            "public half accepts it for that content and no other."
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sign.add_argument("--change", required=True, metavar="ID")
    sign.add_argument(
        "--claims",
        required=True,
        metavar="A,B",
        help="claims this receipt credits (comma-separated)",
    )
    sign.add_argument(
        "--key",
        required=True,
        type=Path,
        metavar="PATH",
        help="Ed25519 private key (PKCS#8 PEM, e.g. from `changeloop keygen`)",
    )
    sign.add_argument(
        "--issuer",
        required=True,
        metavar="NAME",
        help="the issuer the verifying provider expects (ci.issuer / authority.name)",
    )
    sign.add_argument("--status", choices=("pass", "fail"), default="pass")
    sign.add_argument("--reason", metavar="TEXT", help="why it fails (with --status fail)")
    sign.add_argument("--url", metavar="URL", help="the CI run or review this receipt records")
    sign.add_argument("--capability", default="review", metavar="NAME")
    sign.add_argument("--provider", metavar="NAME", help="provider name (default: the capability)")
    sign.add_argument("--out", type=Path, metavar="FILE", help="write here (default: stdout)")
    sign.add_argument(
        "--sandbox",
        choices=("none", "copy", "worktree"),
        default="none",
        help="content the receipt binds to, as `prove --sandbox` would see it: tracked plus "
        "untracked-not-ignored files (none, copy; default) or tracked files only (worktree)",
    )
    common.add_common(sign)
    sign.set_defaults(func=run_sign)

    verify = verbs.add_parser(
        "verify",
        help="verify a receipt and name the first failed check",
        description="Exit 0 when the receipt is valid, 1 when not (naming the first failed check).",
    )
    verify.add_argument("file", type=Path, metavar="FILE")
    verify.add_argument(
        "--public-key",
        required=True,
        type=Path,
        action="append",
        metavar="PEM",
        help="trusted Ed25519 public key file (repeatable)",
    )
    verify.add_argument(
        "--change", metavar="ID", help="also require the receipt to name this change"
    )
    common.add_common(verify)
    verify.set_defaults(func=run_verify)

    imp = verbs.add_parser(
        "import",
        help="copy verified receipts into the change's receipts/ directory",
        description=(
            "Verify each FILE with the keys of the change's external providers (plus\n"
            "--public-key), then copy all of them into openspec/changes/<id>/receipts/.\n"
            "Any refusal exits 1 and copies nothing."
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    imp.add_argument("files", type=Path, nargs="+", metavar="FILE")
    imp.add_argument("--change", required=True, metavar="ID")
    imp.add_argument("--public-key", type=Path, action="append", default=[], metavar="PEM")
    common.add_common(imp)
    imp.set_defaults(func=run_import)


# -- sign ------------------------------------------------------------------
def run_sign(args: argparse.Namespace) -> int:
    from changeloop import workspace
    from changeloop.identity import content_identity
    from changeloop.jcs import canonicalize
    from changeloop.keys import load_private_key
    from changeloop.model import ClaimMark
    from changeloop.plan import build_plan
    from changeloop.providers.base import Observer, Outcome
    from changeloop.receipts import (
        SIGNED_ADAPTER,
        ReceiptFacts,
        build_statement,
        configuration_digests,
        seal,
        sha256_hex,
        write_atomic,
    )

    key = load_private_key(args.key)
    claims = [c.strip() for c in args.claims.split(",") if c.strip()]
    if args.status == "fail" and not args.reason:
        args.reason = f"{args.issuer} signed this off as failing"
    root = workspace.find_root(override=common.root_arg(args))
    change = workspace.find_change(root, args.change)
    plan = build_plan(root, change)
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


# -- verify ----------------------------------------------------------------
@common.with_shape(lambda a: {"version": "1", "file": str(a.file), "valid": False})
def run_verify(args: argparse.Namespace) -> int:
    from changeloop.dsse import read_envelope
    from changeloop.keys import load_public_key_file
    from changeloop.text import escape_controls as esc
    from changeloop.verify import Expectation, VerificationError, verify_envelope

    keys = [load_public_key_file(p) for p in args.public_key]
    doc: dict[str, Any] = {"version": "1", "file": str(args.file)}
    try:
        data = read_envelope(args.file)  # at most 4 MiB is ever read
        from changeloop.vsa import claims_to_be_vsa

        if claims_to_be_vsa(data):  # a `changeloop summary` VSA: changeloop/cli/summary.py
            from changeloop.cli.summary import verify_command

            return verify_command(args, data, keys)
        verified = verify_envelope(data, keys, Expectation(change=args.change))
    except OSError as exc:
        raise ChangeloopError(
            Problem(
                code="unreadable",
                message=f"cannot read receipt {args.file}: {exc.strerror}",
                location=Location(str(args.file)),
            ),
            exit_code=2,
        ) from exc
    except VerificationError as exc:
        problem = Problem(
            code=f"receipt_{exc.check.lower()}",
            message=f"{exc.check} check failed: {exc.reason}",
            location=Location(str(args.file)),
        )
        doc.update(valid=False, check=exc.check, reason=exc.reason, errors=[problem.to_json()])
        if common.json_mode(args):
            common.emit_json(doc)
        common.say(esc(f"invalid: {args.file}: {exc.check} check failed: {exc.reason}"))
        return 1
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


# -- import ----------------------------------------------------------------
@common.with_shape(lambda a: {"version": "1", "change": a.change, "imported": []})
def run_import(args: argparse.Namespace) -> int:
    from changeloop import workspace
    from changeloop.dsse import read_envelope
    from changeloop.fsio import write_all
    from changeloop.keys import load_public_key, load_public_key_file
    from changeloop.plan import build_plan
    from changeloop.state import check_state
    from changeloop.verify import Expectation, Trusted, VerificationError, verify_envelope

    root = workspace.find_root(override=common.root_arg(args))
    check_state(root)
    change = workspace.find_change(root, args.change)
    target = change.path / "receipts"
    _refuse_symlinked(target, root)
    plan = build_plan(root, change)
    keys = [
        Trusted(load_public_key(k.public_key_pem, k.source), issuer=k.name)
        for p in plan.providers.values()
        if p.adapter == "external"
        for k in p.trusted_keys
    ]
    keys += [Trusted(load_public_key_file(p)) for p in args.public_key]
    if not keys:
        raise ChangeloopError(
            Problem(
                code="no_trusted_key",
                message=f"change {change.id} has no external provider naming a key, and no"
                " --public-key was given; nothing can verify these receipts",
                fix="pass --public-key PEM or add ci: {issuer, publicKey} to an external provider",
            ),
            exit_code=1,
        )
    accepted: list[tuple[Path, bytes, str]] = []
    refused: list[Problem] = []
    for path in args.files:
        try:
            data = read_envelope(path)  # bounded: never more than 4 MiB is read
        except OSError as exc:  # an unreadable file is one more refusal: nothing is copied
            refused.append(
                Problem(
                    code="unreadable",
                    message=f"cannot read receipt {path}: {exc.strerror}",
                    location=Location(str(path)),
                )
            )
            continue
        except VerificationError as exc:
            refused.append(
                Problem(
                    code=f"receipt_{exc.check.lower()}",
                    message=f"{exc.check} check failed: {exc.reason}",
                    location=Location(str(path)),
                )
            )
            continue
        try:
            verified = verify_envelope(data, keys, Expectation(change=change.id))
        except VerificationError as exc:
            refused.append(
                Problem(
                    code=f"receipt_{exc.check.lower()}",
                    message=f"{exc.check} check failed: {exc.reason}",
                    location=Location(str(path)),
                )
            )
            continue
        accepted.append((path, data, verified.id))
    if refused:
        raise ChangeloopError(
            [
                *refused,
                Problem(
                    code="nothing_imported",
                    message="nothing was imported (one refusal copies nothing)",
                ),
            ],
            exit_code=1,
        )
    _refuse_symlinked(target, root)  # again, just before writing
    try:
        target.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ChangeloopError(
            Problem(
                code="unwritable",
                message=f"cannot create {target}: {exc.strerror or exc}",
                location=Location(str(target)),
                fix="run as a user who can write the change's directory",
            ),
            exit_code=1,
        ) from exc
    items = [(target / f"{rid.removeprefix('sha256:')}.json", data) for _p, data, rid in accepted]
    try:  # write all, fsync all, rename all, fsync the directory (DESIGN.md §13)
        write_all(items)
    except OSError as exc:
        raise ChangeloopError(
            Problem(
                code="unwritable",
                message=f"cannot write into {target}: {exc.strerror or exc}",
                location=Location(str(exc.filename or target)),
                fix="run as a user who can write the change's directory",
            ),
            exit_code=1,
        ) from exc
    imported = []
    for (path, _data, receipt_id), (dest, _bytes) in zip(accepted, items, strict=True):
        imported.append({"file": str(path), "id": receipt_id, "path": _rel(dest, root)})
        common.say(f"imported {path} → {_rel(dest, root)}")
    if common.json_mode(args):
        common.emit_json({"version": "1", "imported": imported})
    return 0


def _refuse_symlinked(target: Path, root: Path) -> None:
    """Refuse a ``receipts/`` directory that is, or lies under, a symlink (exit 1, nothing copied).

    Writing through it would put verified receipts wherever the link points
    (DESIGN.md §2.6).
    """
    from changeloop.fsio import symlink_under

    link = symlink_under(target, root)
    if link is None:
        return
    raise ChangeloopError(
        [
            Problem(
                code="receipts_symlinked",
                message=f"{link} is a symlink; receipts are imported only into a real"
                f" directory {target}",
                location=Location(str(link)),
                fix=f"replace the symlink {link} with a real directory, then import again",
            ),
            Problem(
                code="nothing_imported", message="nothing was imported (one refusal copies nothing)"
            ),
        ],
        exit_code=1,
    )


def _rel(path: Path, root: Path) -> str:
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return str(path)

"""``changeloop receipt sign|verify|import``: receipts for work changeloop did not run.

- ``sign`` issues a receipt bound to the current content of the change's
  repositories (a reviewer's sign-off, a CI job of another tool);
- ``verify`` runs the verification order of docs/receipts.md and names the first
  failed check (exit 0 valid, 1 invalid);
- ``import`` copies envelopes into ``openspec/changes/<id>/receipts/`` after
  verifying them with the keys the change's ``external`` providers name (plus
  ``--public-key``); one refusal copies nothing.

This module registers the verb and its flags; each sub-verb runs in its own
module (``sign.py``, ``verify.py``, ``importing.py``), and the refusals they
share are in ``problems.py``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from changeloop.cli import common, help_examples, trust_flags
from changeloop.cli.receipt.importing import run_import
from changeloop.cli.receipt.sign import run_sign
from changeloop.cli.receipt.verify import run_verify

if TYPE_CHECKING:
    from changeloop.cli.boundary import Said


def empty(said: Said) -> dict[str, Any]:
    """The ``--json`` document of a refused or interrupted ``receipt`` sub-verb."""
    if said.sub == "verify":
        return {"version": "1", "file": said.value("file"), "valid": False}
    if said.sub == "import":
        change = said.value("change") if said.args is not None else None
        return {"version": "1", "change": change, "imported": []}
    return {"version": "1"}


def register(sub: Any) -> None:
    """``receipt`` and its three sub-verbs, each with its own flags."""
    parser = sub.add_parser(
        "receipt",
        help="sign, verify or import receipts",
        description="Sign, verify or import DSSE receipts (in-toto statements, Ed25519).",
        **help_examples.ending("receipt"),
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
        **help_examples.ending("receipt sign"),
    )
    sign.add_argument(
        "--change", required=True, metavar="ID", help="the change the receipt speaks for"
    )
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
    sign.add_argument(
        "--status",
        choices=("pass", "fail"),
        default="pass",
        help="what the work found (default: pass)",
    )
    sign.add_argument("--reason", metavar="TEXT", help="why it fails (with --status fail)")
    sign.add_argument("--url", metavar="URL", help="the CI run or review this receipt records")
    sign.add_argument(
        "--capability",
        default="review",
        metavar="NAME",
        help="the capability it proves (default: review); an external provider of that "
        "capability accepts it",
    )
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
        **help_examples.ending("receipt verify"),
    )
    verify.add_argument(
        "file", type=Path, metavar="FILE", help="the envelope: a receipt or a summary (VSA)"
    )
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
            "--public-key; --trust-from REV takes those providers' keys from REV instead),\n"
            "then copy all of them into openspec/changes/<id>/receipts/.\n"
            "Any refusal exits 1 and copies nothing."
        ),
        **help_examples.ending("receipt import"),
    )
    imp.add_argument("files", type=Path, nargs="+", metavar="FILE", help="envelopes to import")
    imp.add_argument(
        "--change", required=True, metavar="ID", help="the change whose receipts/ they go into"
    )
    imp.add_argument(
        "--public-key",
        type=Path,
        action="append",
        default=[],
        metavar="PEM",
        help="also trust receipts signed by this Ed25519 public key (repeatable)",
    )
    trust_flags.add(imp)
    common.add_common(imp)
    imp.set_defaults(func=run_import)

"""``changeloop keygen --out DIR``: an Ed25519 key pair for signing receipts (CI, reviewers).

Writes ``DIR/changeloop.key`` (PKCS#8 PEM, mode 0600) and ``DIR/changeloop.pub``
(SPKI PEM); refuses to overwrite an existing key.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from changeloop.cli import common
from changeloop.errors import ChangeloopError, Location, Problem


def register(sub: Any) -> None:
    parser = sub.add_parser(
        "keygen",
        help="make an Ed25519 key pair for signing receipts",
        description=(
            "Write DIR/changeloop.key (private, PKCS#8 PEM, mode 0600) and DIR/changeloop.pub\n"
            "(public, SPKI PEM). Keep the .key in a protected CI secret; put the .pub in\n"
            "execution.yaml (ci: {issuer, publicKey}) of the changes that trust it."
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--out",
        type=Path,
        required=True,
        metavar="DIR",
        help="directory to write changeloop.key and changeloop.pub into",
    )
    common.add_common(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from changeloop.keys import keyid, load_private_key, write_keypair

    try:
        key_path, pub_path = write_keypair(args.out, "changeloop")
    except OSError as exc:
        raise ChangeloopError(
            Problem(
                code="key_write_failed",
                message=f"cannot write the key pair into {args.out}: {exc.strerror or exc}",
                location=Location(str(args.out)),
                fix="pass --out a directory you can create and write",
            )
        ) from exc
    kid = keyid(load_private_key(key_path).public_key())
    if common.json_mode(args):
        common.emit_json(
            {"version": "1", "privateKey": str(key_path), "publicKey": str(pub_path), "keyid": kid}
        )
    common.say(f"wrote {key_path} (private, mode 0600) and {pub_path} (public)")
    common.say(f"keyid {kid}")
    return 0

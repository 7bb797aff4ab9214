"""``changeloop keygen --out DIR``: an Ed25519 key pair for signing receipts (CI, reviewers).

Writes ``DIR/changeloop.key`` (PKCS#8 PEM, mode 0600) and ``DIR/changeloop.pub``
(SPKI PEM); refuses to overwrite an existing key.
"""

from __future__ import annotations

import argparse
import os
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING, Any

from changeloop.cli import common, help_examples
from changeloop.errors import ChangeloopError, Location, Problem

if TYPE_CHECKING:
    from changeloop.cli.boundary import Said


def empty(said: Said) -> dict[str, Any]:  # noqa: ARG001 (every verb's shape takes what was said)
    """The ``--json`` document of a refused or interrupted ``keygen``."""
    return {"version": "1"}


def register(sub: Any) -> None:
    parser = sub.add_parser(
        "keygen",
        help="make an Ed25519 key pair for signing receipts",
        description=(
            "Write DIR/changeloop.key (private, PKCS#8 PEM, mode 0600) and DIR/changeloop.pub\n"
            "(public, SPKI PEM). Keep the .key in a protected CI secret; put the .pub in\n"
            "execution.yaml (ci: {issuer, publicKey}) of the changes that trust it."
        ),
        **help_examples.ending("keygen"),
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


def _refuse_unignored(out_dir: Path) -> None:
    """Inside a git work tree, refuse an ``--out`` where git would not ignore the private key.

    A key written where ``git add -A`` picks it up is one commit away from
    being public (docs/threat-model.md).
    """
    probe = out_dir
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent  # --out may not exist yet: ask from its nearest ancestor
    if not probe.is_dir():
        return
    env = {**os.environ, "GIT_OPTIONAL_LOCKS": "0"}
    try:
        top = subprocess.run(
            ["git", "rev-parse", "--show-toplevel"],
            cwd=probe,
            capture_output=True,
            text=True,
            check=False,
            env=env,
            timeout=60,
        )
    except (OSError, subprocess.SubprocessError):
        return  # no git here: nothing can commit the key
    if top.returncode != 0 or not top.stdout.strip():
        return  # not inside a work tree
    key = out_dir.resolve() / "changeloop.key"  # the physical path, as git sees the tree
    done = subprocess.run(
        ["git", "check-ignore", "-q", "--", str(key)],
        cwd=probe,
        capture_output=True,
        text=True,
        check=False,
        env=env,
        timeout=60,
    )
    if done.returncode == 0:
        return  # ignored
    why = done.stderr.strip().splitlines()[-1] if done.returncode != 1 and done.stderr else ""
    raise ChangeloopError(
        Problem(
            code="key_not_ignored",
            message=(
                f"{key} is inside the git work tree {top.stdout.strip()} and git would not"
                " ignore it; a private key there is one `git add` away from being committed"
                + (f" ({why})" if why else "")
            ),
            location=Location(str(out_dir)),
            fix=(
                "write the key outside the repository (e.g. --out ~/.config/changeloop), or"
                " add `changeloop.key` (or the --out directory) to .gitignore first"
            ),
        ),
        exit_code=2,
    )


def run(args: argparse.Namespace) -> int:
    from changeloop.signing.keys import keyid, load_private_key, write_keypair

    _refuse_unignored(args.out)
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

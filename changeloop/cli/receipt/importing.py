"""``changeloop receipt import``: verified envelopes into ``openspec/changes/<id>/receipts/``.

Example::

    changeloop receipt import ci.json review.json --change add-login

Each file is verified with the keys the change's ``external`` providers name (plus
``--public-key``; with ``--trust-from REV`` / ``--trust-keyring FILE``, the keys
those name: :mod:`changeloop.trust`) and bound to the change; one refusal copies
nothing. The files are written all or nothing (write, fsync, rename, fsync the
directory), named by receipt id, never through a symlinked ``receipts/``
(docs/threat-model.md).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from changeloop.cli import common, trust_flags
from changeloop.cli.receipt.problems import NOTHING_IMPORTED, check_failed, unreadable
from changeloop.errors import ChangeloopError, Location, Problem

if TYPE_CHECKING:
    from changeloop.model import Plan
    from changeloop.trust import Trust


def run_import(args: argparse.Namespace) -> int:
    from changeloop.plan import build_plan, display_path
    from changeloop.workspace import discovery as workspace
    from changeloop.workspace.state import check_state

    root = common.find_root(args)
    check_state(root)
    change = workspace.find_change(root, args.change)
    target = change.path / "receipts"
    _refuse_symlinked(target, root)
    _refuse_file(target, display_path(root, target))
    plan, trust = trust_flags.trusted(args, build_plan(root, change))
    trust_flags.say(trust)
    common.known_for_refusal(trust=trust.to_json())  # a refusal's document names the trust
    return _import(args, plan, trust, target)


def _import(args: argparse.Namespace, plan: Plan, trust: Trust, target: Path) -> int:
    from changeloop.fsio import write_all
    from changeloop.plan import display_path
    from changeloop.signing.dsse import read_envelope
    from changeloop.signing.keys import load_public_key
    from changeloop.signing.verify import Expectation, Trusted, VerificationError, verify_envelope

    root, change = plan.root, plan.change
    keys = [
        Trusted(load_public_key(k.public_key_pem, k.source), issuer=k.name)
        for p in plan.providers.values()
        if p.adapter == "external"
        for k in p.trusted_keys
    ]
    keys += [Trusted(k) for k in trust.command_line]
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
            verified = verify_envelope(data, keys, Expectation(change=change.id))
        except OSError as exc:  # an unreadable file is one more refusal: nothing is copied
            refused.append(unreadable(exc, path))
            continue
        except VerificationError as exc:
            refused.append(check_failed(exc, path))
            continue
        accepted.append((path, data, verified.id))
    if refused:
        raise ChangeloopError([*refused, NOTHING_IMPORTED], exit_code=1)
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
    try:  # write all, fsync all, rename all, fsync the directory (docs/design.md)
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
        shown = display_path(root, dest)
        imported.append({"file": str(path), "id": receipt_id, "path": shown})
        common.say(f"imported {path} → {shown}")
    if common.json_mode(args):
        common.emit_json({"version": "1", "imported": imported, "trust": trust.to_json()})
    return 0


def _refuse_symlinked(target: Path, root: Path) -> None:
    """Refuse a ``receipts/`` directory that is, or lies under, a symlink (exit 1, nothing copied).

    Writing through it would put verified receipts wherever the link points
    (docs/threat-model.md).
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
            NOTHING_IMPORTED,
        ],
        exit_code=1,
    )


def _refuse_file(target: Path, shown: str) -> None:
    """Refuse a ``receipts`` that is a file before anything is verified (exit 1, nothing copied)."""
    if target.is_symlink() or not target.exists() or target.is_dir():
        return
    raise ChangeloopError(
        [
            Problem(
                code="receipts_not_a_directory",
                message=f"{shown} is a file, not a directory; receipts are imported into it",
                location=Location(shown),
                fix=f"move {shown} away (receipts are kept as files inside that directory),"
                " then import again",
            ),
            NOTHING_IMPORTED,
        ],
        exit_code=1,
    )

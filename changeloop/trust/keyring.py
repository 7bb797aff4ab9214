"""``--trust-keyring FILE``: the keys CI trusts, per issuer, in a file outside the change.

Example (YAML or JSON; ``schemas/keyring-v1.json``)::

    version: 1
    issuers:
      github-actions: [ci-keys/changeloop.pub]        # a path, relative to this file
      alice: ["-----BEGIN PUBLIC KEY-----\\n…\\n-----END PUBLIC KEY-----\\n"]

    ring = load_keyring(Path("keyring.yaml"))
    ring.sha256                       # of the file's bytes: how every verb names it
    ring.keys("github-actions")       # the TrustedKeys an external provider of that issuer gets

An ``external`` provider whose ``ci.issuer`` (or ``authority.name``) is a name of
the keyring trusts that name's keys. Every entry must be an Ed25519 public key.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from changeloop.errors import ConfigError, FileRefused, Location, Problem
from changeloop.fsio import KIB, MIB, read_regular
from changeloop.model import TrustedKey
from changeloop.signing.keys import KeyRefused, load_public_key

__all__ = ["Keyring", "load_keyring"]

READS = 1
SCHEMA = "keyring-v1.json"
_PEM = "-----BEGIN"


@dataclass(frozen=True)
class Keyring:
    path: Path
    sha256: str
    issuers: Mapping[str, tuple[tuple[str, str], ...]]  # name -> (PEM, where it came from)

    def keys(self, name: str | None, role: Literal["ci", "authority"]) -> tuple[TrustedKey, ...]:
        """The keys ``name`` signs with, as an external provider's trusted keys of ``role``."""
        if name is None:
            return ()
        return tuple(
            TrustedKey(role=role, name=name, public_key_pem=pem, source=source)
            for pem, source in self.issuers.get(name, ())
        )


def load_keyring(path: Path) -> Keyring:
    """Read, validate and load every key of the keyring (ConfigError / KeyRefused: exit 2)."""
    from changeloop.config.schema import check_version, schema_problems  # noqa: PLC0415 - config pulls in yaml; only loading a keyring needs it
    from changeloop.config.yamlio import parse_yaml_bytes  # noqa: PLC0415 - config pulls in yaml; only loading a keyring needs it

    shown = str(path)
    try:
        raw = read_regular(path, limit=1 * MIB, what="--trust-keyring")
    except FileRefused as exc:
        raise ConfigError(
            Problem(
                code="keyring_unreadable",
                message=f"--trust-keyring {shown} {exc.reason}",
                location=Location(shown),
                fix="name the keyring file CI keeps outside the checkout (docs/keys-and-ci.md)",
            )
        ) from exc
    doc = parse_yaml_bytes(raw, path, shown)
    check_version(doc, file=path.name, reads=READS)
    problems = schema_problems(doc, SCHEMA, family="keyring", version=READS)
    if problems:
        raise ConfigError(problems)
    issuers: dict[str, tuple[tuple[str, str], ...]] = {}
    for name, entries in doc.data["issuers"].items():
        loaded = []
        for index, entry in enumerate(entries):
            where = doc.location(("issuers", name, index))
            pem, source = _entry(path, str(entry), where)
            try:
                load_public_key(pem, source)
            except KeyRefused as exc:
                raise ConfigError(
                    [
                        Problem(
                            code=p.code,
                            message=f"keyring entry {index + 1} of {name!r}: {p.message}",
                            location=where,
                            fix=p.fix,
                        )
                        for p in exc.problems
                    ]
                ) from exc
            loaded.append((pem, source))
        issuers[str(name)] = tuple(loaded)
    return Keyring(path, hashlib.sha256(raw).hexdigest(), issuers)


def _entry(keyring: Path, entry: str, where: Location) -> tuple[str, str]:
    """(PEM, where it came from) of one entry: inline, or a file beside the keyring."""
    if entry.lstrip().startswith(_PEM):
        return entry, f"{keyring} (inline)"
    key_path = keyring.parent / entry
    try:
        data = read_regular(key_path, limit=64 * KIB, what="public key")
        return data.decode("utf-8"), str(key_path)
    except (FileRefused, UnicodeDecodeError) as exc:
        raise ConfigError(
            Problem(
                code="keyring_key_unreadable",
                message=f"keyring entry {entry!r} cannot be read"
                f" ({getattr(exc, 'reason', None) or exc})",
                location=where,
                fix="give an SPKI PEM block, or the path of a .pub file relative to the keyring",
            )
        ) from exc

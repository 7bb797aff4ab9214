"""What a no-change answer depends on: the record's key, and the digests it is made of.

Shared by :mod:`~changeloop.nochange.record` (which writes the key) and
:mod:`~changeloop.nochange.answer` (which observes it again).
"""

from __future__ import annotations

import hashlib
import hmac
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from changeloop import __version__, fsio
from changeloop.errors import FileRefused
from changeloop.formats import FINGERPRINT_FORMAT, PROVE_DOCUMENT, RECEIPT_SCHEMA
from changeloop.passenv import passed_names

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey


SCHEMA = "changeloop/no-change@2"
PAYLOAD_TYPE = "application/vnd.changeloop.no-change+json"
DECISIONS = "decisions"
RECORD_LIMIT = 4 * fsio.MIB  # the DSSE bound every envelope read obeys
CONFIG_LIMIT = 16 * fsio.MIB
CONFIG_FILES = ("evidence.yaml", "execution.yaml")
_CHANGE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,200}$")


# -- the key: what the answer depends on ----------------------------------------------
def option_key(*, sandbox: str, issuer: str, url: str | None, fail_fast: bool) -> dict[str, Any]:
    """The command-line options a cached re-prove's answer depends on.

    ``--jobs`` and ``--keep-sandbox`` are left out: with every provider cached
    nothing runs, so neither changes the answer (run.json's ``slots`` is
    written from this run's ``--jobs``).
    """
    return {"sandbox": sandbox, "issuer": issuer, "url": url, "failFast": fail_fast}


def config_digests(change_path: Path) -> dict[str, str | None]:
    """sha256 of evidence.yaml and execution.yaml as they are now (None: absent).

    Read *before* the plan is parsed: an edit racing the run makes the record's
    key older than its answer, so the record is never used (a miss, not a lie).
    """
    return {name: file_digest(change_path / name) for name in CONFIG_FILES}


def file_digest(path: Path) -> str | None:
    """sha256 of a file's bytes; None when absent; "unreadable" (never a digest) otherwise."""
    if not os.path.lexists(path):
        return None
    try:
        data = fsio.read_regular(path, limit=CONFIG_LIMIT, what=path.name)
    except FileRefused:
        return "unreadable"  # never equal to a digest: no record is used
    return hashlib.sha256(data).hexdigest()


def base_key(
    root: Path,
    change_id: str,
    change_path: Path,
    options: Mapping[str, Any],
    config: Mapping[str, str | None],
) -> dict[str, Any]:
    return {
        "changeloop": __version__,
        "proveDocument": PROVE_DOCUMENT,
        "fingerprintFormat": FINGERPRINT_FORMAT,
        "receiptSchema": RECEIPT_SCHEMA,
        "root": str(root),
        "change": change_id,
        "changePath": str(change_path),
        "options": dict(options),
        "config": dict(config),
    }


def record_path(state: Path, change_id: str) -> Path | None:
    """``.changeloop/decisions/<change>.json`` (None for an id that is no plain file name)."""
    if not _CHANGE_ID.match(change_id):
        return None
    return state / DECISIONS / f"{change_id}.json"


def seed(key: Ed25519PrivateKey) -> bytes:
    from cryptography.hazmat.primitives import serialization  # noqa: PLC0415 - cryptography is heavy; kept off the no-change answer's imports

    return key.private_bytes(
        serialization.Encoding.Raw, serialization.PrivateFormat.Raw, serialization.NoEncryption()
    )


def secret_key(seed: bytes) -> bytes:
    """The HMAC key for envFrom values in the record, derived from the workspace key's seed."""
    return hashlib.sha256(b"changeloop no-change envFrom\0" + seed).digest()


def env_from(names: Sequence[str], secret: bytes, environ: Mapping[str, str]) -> dict[str, Any]:
    """Each name: null when unset, else an HMAC of its value (values never stored)."""
    out: dict[str, Any] = {}
    for name in names:
        value = environ.get(name)
        out[name] = (
            None
            if value is None
            else hmac.new(secret, value.encode("utf-8", "surrogatepass"), "sha256").hexdigest()
        )
    return out


def environ_values(
    patterns: Sequence[str], secret: bytes, environ: Mapping[str, str]
) -> dict[str, str]:
    """Each variable a command of the plan may get (the fixed set and every ``passEnv``
    pattern of the plan): an HMAC of its value (values never stored). A variable set or
    unset since is a different map."""
    return {
        name: hmac.new(secret, environ[name].encode("utf-8", "surrogatepass"), "sha256").hexdigest()
        for name in passed_names(environ, patterns)
    }


def pass_env_patterns(plan: Any) -> list[str]:
    """Every ``passEnv`` pattern of the plan's providers and services."""
    found = {g for p in plan.providers.values() for g in p.pass_env}
    found |= {g for s in plan.services.values() for g in s.pass_env}
    return sorted(found)


def part_digest(part: Mapping[str, Any]) -> str:
    from changeloop.signing.jcs import canonicalize  # noqa: PLC0415 - kept off the no-change answer's imports

    return hashlib.sha256(canonicalize(dict(part))).hexdigest()


def stat_of(path: Path) -> str | None:
    """inode, size and mtime of a file we wrote atomically: any rewrite changes the inode.

    A string: nanosecond mtimes are beyond the integers RFC 8785 represents exactly.
    """
    try:
        info = os.lstat(path)
    except OSError:
        return None
    return stat_text(info)


def stat_text(info: os.stat_result) -> str:
    """:func:`stat_of`'s form of a status already taken (of the file that was read)."""
    return f"{info.st_ino}:{info.st_size}:{info.st_mtime_ns}"


# -- writing the record (after a full run) ----------------------------------------------

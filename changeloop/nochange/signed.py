"""The no-change record sealed and verified with the workspace key's secret, read with the
standard library.

The record is a DSSE envelope whose one signature is an HMAC-SHA256 of the DSSE
pre-authentication encoding, keyed by a key derived from the workspace key's seed: only
the holder of that seed makes it, and only the holder checks it (the same process,
later), so a public-key signature would prove nothing more and cost a re-prove the
import of the cryptography (docs/decisions/201-the-no-change-record-is-sealed-with-a-mac.md).

Reading (:func:`read_record`) comes before believing (:func:`verify_record`):
the content identities start from the record's repository paths while its
seal is still being checked, and nothing they compute is used unless it
verifies (changeloop.nochange.answer).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
from typing import TYPE_CHECKING, Any

from changeloop import fsio
from changeloop.errors import FileRefused
from changeloop.nochange.key import PAYLOAD_TYPE, RECORD_LIMIT, SCHEMA, record_path
from changeloop.nochange.miss import Miss
from changeloop.signing.dsse import pae, parse_envelope
from changeloop.signing.jcs import canonicalize

if TYPE_CHECKING:
    from pathlib import Path

KEYID = "hmac-sha256"  # says how the record's one signature was made: there is one key

# PKCS#8 DER of an Ed25519 private key is this prefix and the 32-byte seed (RFC 8410).
_PKCS8_ED25519 = bytes.fromhex("302e020100300506032b657004220420")
_PEM = re.compile(
    rb"^-----BEGIN PRIVATE KEY-----\n([A-Za-z0-9+/=\n]+)-----END PRIVATE KEY-----\n?$"
)


def workspace_seed(path: Path) -> bytes | None:
    """The workspace key's seed, read without cryptography's serialization (imports a
    re-prove skips); anything but the PKCS#8 PEM ``keys.py`` writes is None (the full path then
    loads, or refuses, the key itself). ``state.check_state`` has checked its mode."""
    try:
        raw = fsio.read_regular_stat(path, limit=64 * 1024, what="key", follow_symlinks=False)[0]
    except FileRefused:
        return None
    found = _PEM.match(raw)
    if found is None:
        return None
    der = base64.b64decode(found[1].replace(b"\n", b""), validate=True)
    if len(der) != len(_PKCS8_ED25519) + 32 or not der.startswith(_PKCS8_ED25519):
        return None
    return der[len(_PKCS8_ED25519) :]


def read_record(state: Path, change_id: str) -> tuple[bytes, bytes, dict[str, Any]]:
    """The record's bytes, payload and parsed payload, *not yet verified* (:func:`verify_record`).

    Parsed here with the standard library alone: the DSSE module imports the
    cryptography it needs to verify, and the content identities start before.
    """
    path = record_path(state, change_id)
    if path is None:
        raise Miss("no record name for this change")
    try:
        raw = fsio.read_regular_stat(
            path, limit=RECORD_LIMIT, what="no-change record", follow_symlinks=False
        )[0]
    except FileRefused as exc:
        raise Miss(str(exc)) from exc
    envelope = json.loads(raw)
    if not isinstance(envelope, dict) or envelope.get("payloadType") != PAYLOAD_TYPE:
        raise Miss("not a no-change record")
    payload = base64.b64decode(envelope["payload"], validate=True)
    doc = json.loads(payload)
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
        raise Miss("a record of another schema")
    return raw, payload, doc


def seal_record(payload: bytes, seed: bytes) -> bytes:
    """The record's envelope (RFC 8785 bytes plus a newline): ``payload`` with its MAC."""
    envelope = {
        "payload": base64.b64encode(payload).decode("ascii"),
        "payloadType": PAYLOAD_TYPE,
        "signatures": [{"keyid": KEYID, "sig": base64.b64encode(_mac(payload, seed)).decode()}],
    }
    return canonicalize(envelope) + b"\n"


def verify_record(state: Path, raw: bytes, payload: bytes) -> bytes:
    """The workspace key's seed, when the envelope ``raw`` (whose payload :func:`read_record`
    parsed as ``payload``) carries the MAC that seed gives; else a ``Miss``."""
    seed = workspace_seed(state / "keys" / "local.key")
    if seed is None:
        raise Miss("no workspace key in the form this changeloop writes")
    envelope = parse_envelope(raw)  # strict: one reading of the bytes, or a refusal
    if envelope.payload_type != PAYLOAD_TYPE or envelope.payload != payload:
        raise Miss("the record reads two ways")
    expected = _mac(envelope.payload, seed)
    if any(hmac.compare_digest(s.sig, expected) for s in envelope.signatures):
        return seed
    raise Miss("the record does not verify with the workspace key")


def _mac(payload: bytes, seed: bytes) -> bytes:
    key = hashlib.sha256(b"changeloop no-change record\0" + seed).digest()
    return hmac.digest(key, pae(PAYLOAD_TYPE, payload), "sha256")

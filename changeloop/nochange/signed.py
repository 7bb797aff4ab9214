"""The no-change record read with the standard library, then verified with the workspace key.

Reading (:func:`read_record`) comes before believing (:func:`verify_record`):
the content identities start from the record's repository paths while its
signature is still being checked, and nothing they compute is used unless it
verifies (changeloop.nochange.answer).
"""

from __future__ import annotations

import base64
import json
import re
from typing import TYPE_CHECKING, Any

from changeloop import fsio
from changeloop.errors import FileRefused
from changeloop.nochange.key import PAYLOAD_TYPE, RECORD_LIMIT, SCHEMA, record_path
from changeloop.nochange.miss import Miss

if TYPE_CHECKING:
    from pathlib import Path

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


def verify_record(state: Path, raw: bytes, payload: bytes) -> bytes:
    """The workspace key's seed, when the envelope ``raw`` (whose payload :func:`read_record`
    parsed as ``payload``) verifies with it; else a ``Miss``."""
    from cryptography.exceptions import InvalidSignature  # noqa: PLC0415 - cryptography is heavy; kept off the no-change answer's imports
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey  # noqa: PLC0415 - cryptography is heavy; kept off the no-change answer's imports

    from changeloop.signing.dsse import pae, parse_envelope  # noqa: PLC0415 - kept off the no-change answer's imports

    seed = workspace_seed(state / "keys" / "local.key")
    if seed is None:
        raise Miss("no workspace key in the form this changeloop writes")
    envelope = parse_envelope(raw)  # strict: one reading of the bytes, or a refusal
    if envelope.payload_type != PAYLOAD_TYPE or envelope.payload != payload:
        raise Miss("the record reads two ways")
    public = Ed25519PrivateKey.from_private_bytes(seed).public_key()
    message = pae(envelope.payload_type, envelope.payload)
    for signature in envelope.signatures:
        try:
            public.verify(signature.sig, message)
        except InvalidSignature:
            continue
        return seed
    raise Miss("the record does not verify with the workspace key")

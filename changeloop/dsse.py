"""DSSE v1 envelopes: PAE, signing, strict parsing, signature verification.

Usage::

    data = sign_envelope(payload, PAYLOAD_TYPE, private_key)      # envelope JSON bytes
    env = parse_envelope(data)                                    # no trust yet
    payload = verify_signatures(env, [public_key])                # the verified bytes

Follows https://github.com/secure-systems-lab/dsse/blob/master/protocol.md.
Verification returns the payload bytes that were signed; callers parse those
and nothing else from the envelope (the sigstore-python discipline).

The ``keyid`` of a signature is an unauthenticated hint in the spec. We keep
it honest anyway: a signature whose non-empty ``keyid`` differs from the key
that verifies it is refused (an altered keyid is tampering, and
securesystemslib refuses it too); an empty or absent keyid is accepted.
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from changeloop.errors import ChangeloopError, Problem
from changeloop.jcs import canonicalize
from changeloop.keys import keyid

PAYLOAD_TYPE = "application/vnd.in-toto+json"


class VerificationError(ChangeloopError):
    """A receipt failed one check of the verification order (DESIGN.md §2.3).

    ``check`` names the step (``json``, ``base64``, ``signature``, ``keyid``,
    ``payloadType``, ``payload``, ``statement``, ``change``, ``content``,
    ``claims``, ``provider``, ``issuer``, ``time``, ``result``); ``reason`` says
    what to do about it. Exit code 1: a rejected receipt is a failure, not a
    configuration mistake.
    """

    def __init__(self, check: str, reason: str) -> None:
        self.check = check
        self.reason = reason
        super().__init__(
            Problem(code=f"receipt_{check.lower()}", message=f"{check}: {reason}"), exit_code=1
        )


@dataclass(frozen=True)
class Signature:
    keyid: str
    sig: bytes


@dataclass(frozen=True)
class Envelope:
    """A parsed, *unverified* envelope."""

    payload: bytes
    payload_type: str
    signatures: tuple[Signature, ...]


def pae(payload_type: str, payload: bytes) -> bytes:
    """DSSE v1 Pre-Authentication Encoding.

    ``"DSSEv1" SP len(type) SP type SP len(body) SP body`` with decimal lengths.
    """
    kind = payload_type.encode("utf-8")
    return b"DSSEv1 %d %b %d %b" % (len(kind), kind, len(payload), payload)


def sign_envelope(payload: bytes, payload_type: str, private_key: Ed25519PrivateKey) -> bytes:
    """The envelope JSON (RFC 8785 bytes plus a newline) with one Ed25519 signature."""
    sig = private_key.sign(pae(payload_type, payload))
    doc = {
        "payload": base64.b64encode(payload).decode("ascii"),
        "payloadType": payload_type,
        "signatures": [
            {"keyid": keyid(private_key.public_key()), "sig": base64.b64encode(sig).decode("ascii")}
        ],
    }
    return canonicalize(doc) + b"\n"


def loads_strict(data: bytes | str, what: str) -> Any:
    """``json.loads`` refusing duplicate object keys (two readers could disagree on them)."""

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in items:
            if key in out:
                raise VerificationError("json", f"{what} has the key {key!r} twice; refusing it")
            out[key] = value
        return out

    try:
        return json.loads(data, object_pairs_hook=pairs)
    except VerificationError:
        raise
    except (ValueError, UnicodeDecodeError) as exc:
        where = ""
        if isinstance(exc, json.JSONDecodeError):
            where = f" (line {exc.lineno}, column {exc.colno})"
        raise VerificationError(
            "json", f"{what} is not valid JSON{where}: it may be truncated or not a receipt"
        ) from exc


def b64decode_any(text: Any, field: str) -> bytes:
    """Standard or URL-safe base64, padded or not; anything else is refused."""
    if not isinstance(text, str):
        raise VerificationError("base64", f"{field} must be a base64 string")
    stripped = text.strip().rstrip("=")
    alphabet = "-_" if ("-" in stripped or "_" in stripped) else "+/"
    if ("+" in stripped or "/" in stripped) and alphabet == "-_":
        raise VerificationError("base64", f"{field} mixes standard and URL-safe base64")
    padded = stripped + "=" * (-len(stripped) % 4)
    try:
        return base64.b64decode(padded, altchars=alphabet.encode(), validate=True)
    except (binascii.Error, ValueError) as exc:
        raise VerificationError("base64", f"{field} is not valid base64: {exc}") from exc


def parse_envelope(data: bytes) -> Envelope:
    """Parse an envelope without trusting anything in it."""
    doc = loads_strict(data, "the envelope")
    if not isinstance(doc, dict):
        raise VerificationError("json", "the envelope is not a JSON object")
    missing = [k for k in ("payload", "payloadType", "signatures") if k not in doc]
    if missing:
        raise VerificationError("json", f"the envelope lacks {missing}; it is not a DSSE envelope")
    payload = b64decode_any(doc["payload"], "payload")
    payload_type = doc["payloadType"]
    if not isinstance(payload_type, str):
        raise VerificationError("json", "payloadType must be a string")
    raw_sigs = doc["signatures"]
    if not isinstance(raw_sigs, list) or not raw_sigs:
        raise VerificationError("signature", "the envelope carries no signature; it proves nothing")
    sigs: list[Signature] = []
    for i, item in enumerate(raw_sigs):
        if not isinstance(item, dict) or "sig" not in item:
            raise VerificationError("json", f"signatures[{i}] has no 'sig'")
        kid = item.get("keyid", "")
        if not isinstance(kid, str):
            raise VerificationError("json", f"signatures[{i}].keyid must be a string")
        sigs.append(Signature(keyid=kid, sig=b64decode_any(item["sig"], f"signatures[{i}].sig")))
    return Envelope(payload=payload, payload_type=payload_type, signatures=tuple(sigs))


def verify_signatures(
    envelope: Envelope, keys: list[Ed25519PublicKey]
) -> tuple[bytes, Ed25519PublicKey]:
    """Return (payload, the key that verified it) or raise naming what went wrong."""
    if not keys:
        raise VerificationError("signature", "no trusted public key was given; nothing can verify")
    message = pae(envelope.payload_type, envelope.payload)
    trusted = {keyid(k): k for k in keys}
    keyid_mismatch: tuple[str, str] | None = None
    for signature in envelope.signatures:
        for kid, key in trusted.items():
            try:
                key.verify(signature.sig, message)
            except InvalidSignature:
                continue
            if signature.keyid and signature.keyid != kid:
                keyid_mismatch = (signature.keyid, kid)
                continue
            return envelope.payload, key
    if keyid_mismatch is not None:
        named, actual = keyid_mismatch
        raise VerificationError(
            "keyid",
            f"the signature names keyid {named[:12]}… but was made by trusted key {actual[:12]}…;"
            " the envelope's keyid was altered — ask the issuer for the original file",
        )
    names = sorted({s.keyid for s in envelope.signatures if s.keyid})
    if names and not set(names) & set(trusted):
        raise VerificationError(
            "signature",
            f"signed by key {', '.join(n[:12] + '…' for n in names)}, which is not a trusted key"
            f" (trusted: {', '.join(k[:12] + '…' for k in sorted(trusted))});"
            " configure that key's public PEM if you trust its holder",
        )
    raise VerificationError(
        "signature",
        "the signature does not verify with the trusted key: the payload, payloadType or"
        " signature was altered, or another key signed it",
    )

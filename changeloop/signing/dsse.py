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
import codecs
import json
import os
import re
import stat
from dataclasses import dataclass
from itertools import accumulate
from pathlib import Path
from typing import TYPE_CHECKING, Any

from changeloop.errors import ChangeloopError, Problem
from changeloop.signing.jcs import canonicalize

if TYPE_CHECKING:  # parsing an envelope needs no cryptography (the no-change record's seal)
    from cryptography.hazmat.primitives.asymmetric.ed25519 import (
        Ed25519PrivateKey,
        Ed25519PublicKey,
    )

PAYLOAD_TYPE = "application/vnd.in-toto+json"
MAX_ENVELOPE_BYTES = 4 * 1024 * 1024  # docs/threat-model.md: larger envelopes are refused unread
MAX_DEPTH = 64  # docs/threat-model.md: deeper JSON is refused before it is parsed


class VerificationError(ChangeloopError):
    """A receipt failed one check of the verification order (docs/receipts.md).

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
    from changeloop.signing.keys import (  # noqa: PLC0415 - signing.keys pulls in cryptography; kept off the no-change answer's imports
        signer_keyid,  # keys pulls in serialization: only when signing
    )

    sig = private_key.sign(pae(payload_type, payload))
    envelope = {
        "payload": base64.b64encode(payload).decode("ascii"),
        "payloadType": payload_type,
        "signatures": [
            {"keyid": signer_keyid(private_key), "sig": base64.b64encode(sig).decode("ascii")}
        ],
    }
    return canonicalize(envelope) + b"\n"


def too_large(size: int) -> VerificationError:
    return VerificationError(
        "size",
        f"{size} bytes is too large for a receipt envelope (at most 4 MiB,"
        f" {MAX_ENVELOPE_BYTES} bytes); refusing to read it",
    )


def read_envelope(path: Path) -> bytes:
    """The bytes of an envelope file, never reading more than the cap.

    The size is checked on the open file (``fstat``) before reading, and the
    read itself stops one byte past the cap, so a 200 MB file — or one that grows
    while it is read — costs at most 4 MiB of memory. A FIFO or device is
    refused without blocking on it. ``OSError`` passes through for the caller to
    name the path; every other refusal is a :class:`VerificationError`.
    """
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise VerificationError("size", "is not a regular file; a receipt is a plain file")
        if info.st_size > MAX_ENVELOPE_BYTES:
            raise too_large(info.st_size)
        chunks: list[bytes] = []
        left = MAX_ENVELOPE_BYTES + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
    finally:
        os.close(fd)
    data = b"".join(chunks)
    if len(data) > MAX_ENVELOPE_BYTES:
        raise too_large(len(data))
    return data


def decode_utf8(data: bytes, what: str, check: str = "json") -> str:
    """``data`` as UTF-8 text, refusing a BOM, UTF-16/32 and invalid sequences.

    ``json.loads(bytes)`` would silently accept all of these (and raw surrogate
    bytes), so two readers of one file could see different documents.
    """
    boms = (
        (codecs.BOM_UTF32_LE, "UTF-32"),
        (codecs.BOM_UTF32_BE, "UTF-32"),
        (codecs.BOM_UTF8, "UTF-8 with a byte order mark"),
        (codecs.BOM_UTF16_LE, "UTF-16"),
        (codecs.BOM_UTF16_BE, "UTF-16"),
    )
    for bom, name in boms:
        if data.startswith(bom):
            raise VerificationError(
                check, f"{what} is {name}; it must be UTF-8 without a byte order mark"
            )
    if b"\x00" in data[:4]:
        raise VerificationError(check, f"{what} looks like UTF-16 or UTF-32; it must be UTF-8")
    try:
        return data.decode("utf-8", "strict")
    except UnicodeDecodeError as exc:
        raise VerificationError(
            check, f"{what} is not valid UTF-8 (byte {exc.start}); it must be UTF-8"
        ) from None


# A JSON string, or an unterminated one running to the end of the input. Every
# opening quote matches (no failure, so no retry from the next quote): linear
# even on 4 MiB of `\"\"\"…`, where the plain pattern is quadratic.
_STRING = re.compile(rb'"[^"\\]*(?:\\(?:.|\Z)[^"\\]*)*(?:"|\Z)', re.DOTALL)
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
_STEP = {ord("["): 1, ord("{"): 1, ord("]"): -1, ord("}"): -1}


def nesting_depth(data: bytes) -> int:
    """How deeply JSON text nests arrays and objects, without parsing it.

    Strings are cut out first (brackets inside them do not count), then a
    running sum over the brackets left. Linear and iterative: a 100,000-deep
    file is measured in milliseconds, where ``json.loads`` would recurse until
    it raised ``RecursionError``.
    """
    brackets = _STRING.sub(b"", data).translate(None, _NOT_BRACKETS)
    return max(accumulate(map(_STEP.__getitem__, brackets), initial=0))


def _lone_surrogate(value: Any) -> str | None:
    """The first string (key or value) holding a lone surrogate, if any."""
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                return item
        elif isinstance(item, dict):
            pending.extend(item.keys())
            pending.extend(item.values())
        elif isinstance(item, list):
            pending.extend(item)
    return None


def loads_strict(data: bytes | str, what: str) -> Any:
    """``json.loads`` for untrusted text: strictly UTF-8, nested at most 64 deep,
    no duplicate object keys (two readers could disagree on them), no NaN or
    Infinity, no lone surrogates. Every refusal is a :class:`VerificationError`."""
    text = decode_utf8(data, what) if isinstance(data, bytes) else data
    depth = nesting_depth(text.encode("utf-8", "surrogatepass"))
    if depth > MAX_DEPTH:
        raise VerificationError(
            "json", f"{what} nests arrays/objects {depth} deep (at most {MAX_DEPTH}); refusing it"
        )

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in items:
            if key in out:
                raise VerificationError("json", f"{what} has the key {key!r} twice; refusing it")
            out[key] = value
        return out

    def constant(name: str) -> Any:
        raise VerificationError("json", f"{what} holds {name}, which is not JSON")

    try:
        doc = json.loads(text, object_pairs_hook=pairs, parse_constant=constant)
    except VerificationError:
        raise
    except (ValueError, RecursionError) as exc:
        where = ""
        if isinstance(exc, json.JSONDecodeError):
            where = f" (line {exc.lineno}, column {exc.colno})"
        raise VerificationError(
            "json", f"{what} is not valid JSON{where}: it may be truncated or not a receipt"
        ) from None
    bad = _lone_surrogate(doc)
    if bad is not None:
        raise VerificationError(
            "json", f"{what} holds a lone surrogate ({ascii(bad)[:60]}); it is not valid Unicode"
        )
    return doc


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
    """Parse an envelope without trusting anything in it.

    Refuses (``VerificationError``, never another exception) more than 4 MiB,
    anything but UTF-8, nesting deeper than 64, duplicate keys, lone surrogates.
    """
    if len(data) > MAX_ENVELOPE_BYTES:
        raise too_large(len(data))
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
    from cryptography.exceptions import InvalidSignature  # noqa: PLC0415 - kept off the no-change answer's imports

    from changeloop.signing.keys import keyid  # noqa: PLC0415 - signing.keys pulls in cryptography; kept off the no-change answer's imports

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

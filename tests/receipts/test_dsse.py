"""DSSE v1: PAE vector, strict parsing, keyid honesty, and interop with securesystemslib."""

from __future__ import annotations

import base64
import json

import pytest
from securesystemslib.dsse import Envelope as SslEnvelope
from securesystemslib.signer import CryptoSigner, SSlibKey

from changeloop.signing.dsse import (
    PAYLOAD_TYPE,
    VerificationError,
    pae,
    parse_envelope,
    sign_envelope,
    verify_signatures,
)
from changeloop.signing.keys import generate_private_key, keyid


def test_pae_matches_the_dsse_spec_test_vector() -> None:
    # protocol.md, "Test Vectors": PAE("http://example.com/HelloWorld", "hello world")
    assert pae("http://example.com/HelloWorld", b"hello world") == (
        b"DSSEv1 29 http://example.com/HelloWorld 11 hello world"
    )


def test_pae_counts_bytes_not_characters() -> None:
    assert pae("t/é", "é".encode()) == b"DSSEv1 4 t/\xc3\xa9 2 \xc3\xa9"


def test_round_trip_returns_the_signed_bytes() -> None:
    key = generate_private_key()
    data = sign_envelope(b'{"a":1}', PAYLOAD_TYPE, key)
    env = parse_envelope(data)
    payload, used = verify_signatures(env, [generate_private_key().public_key(), key.public_key()])
    assert payload == b'{"a":1}'
    assert keyid(used) == keyid(key.public_key()) == env.signatures[0].keyid


def test_url_safe_and_unpadded_base64_are_accepted() -> None:
    key = generate_private_key()
    payload = b"\xfb\xff\xfe??>>"  # encodes with + and / in standard base64
    doc = json.loads(sign_envelope(payload, PAYLOAD_TYPE, key))
    assert "+" in doc["payload"] or "/" in doc["payload"]
    doc["payload"] = base64.urlsafe_b64encode(payload).decode().rstrip("=")
    doc["signatures"][0]["sig"] = doc["signatures"][0]["sig"].replace("+", "-").replace("/", "_")
    env = parse_envelope(json.dumps(doc).encode())
    assert verify_signatures(env, [key.public_key()])[0] == payload


def test_mixed_or_invalid_base64_is_refused() -> None:
    key = generate_private_key()
    doc = json.loads(sign_envelope(b"x", PAYLOAD_TYPE, key))
    doc["payload"] = "ab+c-d=="
    with pytest.raises(VerificationError) as err:
        parse_envelope(json.dumps(doc).encode())
    assert err.value.check == "base64"
    doc["payload"] = "!!!!"
    with pytest.raises(VerificationError, match="not valid base64"):
        parse_envelope(json.dumps(doc).encode())


def test_zero_signatures_is_invalid() -> None:
    doc = {"payload": "eA==", "payloadType": PAYLOAD_TYPE, "signatures": []}
    with pytest.raises(VerificationError, match="no signature") as err:
        parse_envelope(json.dumps(doc).encode())
    assert err.value.check == "signature"


def test_duplicate_keys_are_refused_before_anything_else() -> None:
    data = b'{"payload": "eA==", "payload": "eQ==", "payloadType": "x", "signatures": []}'
    with pytest.raises(VerificationError, match="'payload' twice") as err:
        parse_envelope(data)
    assert err.value.check == "json"


def test_keyid_altered_is_refused_but_empty_keyid_is_accepted() -> None:
    key = generate_private_key()
    doc = json.loads(sign_envelope(b"x", PAYLOAD_TYPE, key))
    doc["signatures"][0]["keyid"] = "0" * 64
    with pytest.raises(VerificationError, match="keyid was altered") as err:
        verify_signatures(parse_envelope(json.dumps(doc).encode()), [key.public_key()])
    assert err.value.check == "keyid"
    doc["signatures"][0]["keyid"] = ""
    assert (
        verify_signatures(parse_envelope(json.dumps(doc).encode()), [key.public_key()])[0] == b"x"
    )


def test_signature_by_an_untrusted_key_names_both_keys() -> None:
    signer, trusted = generate_private_key(), generate_private_key()
    env = parse_envelope(sign_envelope(b"x", PAYLOAD_TYPE, signer))
    with pytest.raises(VerificationError, match="not a trusted key") as err:
        verify_signatures(env, [trusted.public_key()])
    assert keyid(signer.public_key())[:12] in err.value.reason
    assert keyid(trusted.public_key())[:12] in err.value.reason


def test_our_envelope_verifies_under_securesystemslib() -> None:
    key = generate_private_key()
    data = sign_envelope(b'{"hello":"world"}', PAYLOAD_TYPE, key)
    env = SslEnvelope.from_dict(json.loads(data))
    ssl_key = SSlibKey.from_crypto(key.public_key(), keyid=keyid(key.public_key()))
    accepted = env.verify([ssl_key], 1)
    assert list(accepted) == [keyid(key.public_key())]
    assert env.pae() == pae(PAYLOAD_TYPE, b'{"hello":"world"}')


def test_securesystemslib_envelope_verifies_under_changeloop() -> None:
    key = generate_private_key()
    ssl_key = SSlibKey.from_crypto(key.public_key(), keyid=keyid(key.public_key()))
    env = SslEnvelope(payload=b'{"x":2}', payload_type=PAYLOAD_TYPE, signatures={})
    env.sign(CryptoSigner(key, ssl_key))
    data = json.dumps(env.to_dict()).encode()
    assert verify_signatures(parse_envelope(data), [key.public_key()])[0] == b'{"x":2}'
    other = generate_private_key()
    with pytest.raises(VerificationError):
        verify_signatures(parse_envelope(data), [other.public_key()])

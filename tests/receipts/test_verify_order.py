"""Verification order of docs/receipts.md: every tampered field class fails, naming its check."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pytest
from receipts_helpers import T0, b64, envelope_doc, reencode, signed, statement, unb64

from changeloop.cli.main import main
from changeloop.model import ContentIdentity
from changeloop.signing.dsse import PAYLOAD_TYPE, sign_envelope
from changeloop.signing.jcs import canonicalize
from changeloop.signing.keys import generate_private_key, public_pem
from changeloop.signing.verify import Expectation, Trusted, VerificationError, verify_envelope

WEB = ContentIdentity(tree="3f2a" + "0" * 36, head="71be" + "0" * 36, dirty=False)
KEY = generate_private_key()
GOOD = signed(statement(subjects={"web": WEB}), KEY)


def expect(**over: object) -> Expectation:
    base: dict[str, object] = dict(
        change="add-review",
        trees={"web": WEB.tree},
        claims=("auth-boundary",),
        issuer="github-actions",
        now=T0,
    )
    base.update(over)
    return Expectation(**base)  # type: ignore[arg-type]


def fails(
    data: bytes, check: str, exp: Expectation | None = None, keys: list[object] | None = None
) -> str:
    with pytest.raises(VerificationError) as err:
        verify_envelope(data, keys or [KEY.public_key()], exp or expect())  # type: ignore[arg-type]
    assert err.value.check == check, err.value.reason
    return err.value.reason


def test_valid_receipt_passes_every_check() -> None:
    v = verify_envelope(GOOD, [KEY.public_key()], expect())
    assert (v.status, v.result, v.issuer) == ("pass", "PASSED", "github-actions")
    assert v.claims == {"auth-boundary": "credited"}


def test_tampered_payload_byte() -> None:
    doc = envelope_doc(GOOD)
    raw = bytearray(unb64(doc["payload"]))
    raw[raw.index(b"pass")] = ord("P")
    doc["payload"] = b64(bytes(raw))
    assert "altered" in fails(reencode(doc), "signature")


def test_tampered_payload_type() -> None:
    doc = envelope_doc(GOOD)
    doc["payloadType"] = "application/json"
    fails(reencode(doc), "signature")


def test_wrong_payload_type_even_when_signed_is_refused() -> None:
    payload = unb64(envelope_doc(GOOD)["payload"])
    data = sign_envelope(payload, "application/json", KEY)
    assert "expected exactly" in fails(data, "payloadType")


def test_tampered_signature_and_keyid() -> None:
    doc = envelope_doc(GOOD)
    sig = bytearray(unb64(doc["signatures"][0]["sig"]))
    sig[0] ^= 1
    doc["signatures"][0]["sig"] = b64(bytes(sig))
    fails(reencode(doc), "signature")
    doc = envelope_doc(GOOD)
    doc["signatures"][0]["keyid"] = "f" * 64
    fails(reencode(doc), "keyid")


def test_duplicate_keys_and_truncation() -> None:
    text = GOOD.decode()
    fails(text.replace('{"payload"', '{"payloadType":"x","payload"', 1).encode(), "json")
    assert "truncated" in fails(GOOD[: len(GOOD) // 2], "json")


def test_duplicate_keys_inside_the_signed_payload_are_refused() -> None:
    payload = canonicalize(statement(subjects={"web": WEB}))
    dup = payload.replace(b'{"_type"', b'{"_type":"x","_type"', 1)
    fails(sign_envelope(dup, PAYLOAD_TYPE, KEY), "json")


def test_statement_type_and_extension_schema() -> None:
    st = statement(subjects={"web": WEB})
    st["predicateType"] = "https://slsa.dev/provenance/v1"
    assert "predicateType" in fails(sign_envelope(canonicalize(st), PAYLOAD_TYPE, KEY), "statement")
    st = statement(subjects={"web": WEB})
    st["predicate"]["changeloop"]["status"] = "maybe"
    fails(sign_envelope(canonicalize(st), PAYLOAD_TYPE, KEY), "statement")


def test_bindings_each_name_their_check() -> None:
    assert "not 'other'" in fails(GOOD, "change", expect(change="other"))
    reason = fails(GOOD, "content", expect(trees={"web": "9c1d" + "0" * 36}))
    assert "made for content 3f2a" in reason and "(commit 71be" in reason and "is 9c1d" in reason
    assert "no content for repository 'api'" in fails(
        GOOD, "content", expect(trees={"web": WEB.tree, "api": "1" * 40})
    )
    assert "other-claim" in fails(GOOD, "claims", expect(claims=("auth-boundary", "other-claim")))
    fails(GOOD, "provider", expect(provider="ci-tests"))
    assert "--issuer gitlab" in fails(GOOD, "issuer", expect(issuer="gitlab"))
    trusted = [Trusted(KEY.public_key(), issuer="alice")]
    assert "trusted only for issuer 'alice'" in fails(GOOD, "issuer", expect(issuer=None), trusted)  # type: ignore[arg-type]


def test_time_window() -> None:
    assert "in the future" in fails(GOOD, "time", expect(now=T0 - timedelta(minutes=6)))
    verify_envelope(GOOD, [KEY.public_key()], expect(now=T0 - timedelta(minutes=4)))
    assert "maxAge 1 d" in fails(GOOD, "time", expect(now=T0 + timedelta(days=2), max_age_s=86400))
    verify_envelope(GOOD, [KEY.public_key()], expect(now=T0 + timedelta(days=2)))


def test_result_must_agree_with_status() -> None:
    st = statement(subjects={"web": WEB})
    st["predicate"]["result"] = "FAILED"
    fails(sign_envelope(canonicalize(st), PAYLOAD_TYPE, KEY), "result")


def test_a_valid_failed_receipt_is_valid_but_says_fail() -> None:
    data = signed(
        statement(subjects={"web": WEB}, status="fail", claims={"auth-boundary": "failed"}), KEY
    )
    v = verify_envelope(data, [KEY.public_key()], expect())
    assert (v.status, v.result) == ("fail", "FAILED")


def test_cli_verify_exit_codes_and_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pub = tmp_path / "ci.pub"
    pub.write_bytes(public_pem(KEY.public_key()))
    receipt = tmp_path / "r.json"
    receipt.write_bytes(GOOD)
    assert main(["receipt", "verify", str(receipt), "--public-key", str(pub), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["valid"] is True and doc["subjects"] == {"web": WEB.tree}
    assert (
        main(
            [
                "receipt",
                "verify",
                str(receipt),
                "--public-key",
                str(pub),
                "--change",
                "nope",
                "--json",
            ]
        )
        == 1
    )
    doc = json.loads(capsys.readouterr().out)
    assert (doc["valid"], doc["check"]) == (False, "change")
    other = tmp_path / "other.pub"
    other.write_bytes(public_pem(generate_private_key().public_key()))
    assert main(["receipt", "verify", str(receipt), "--public-key", str(other)]) == 1
    assert "signature check failed" in capsys.readouterr().err
    bad = tmp_path / "bad.pub"
    bad.write_text("garbage")
    assert main(["receipt", "verify", str(receipt), "--public-key", str(bad)]) == 2
    assert "not a PEM key" in capsys.readouterr().err

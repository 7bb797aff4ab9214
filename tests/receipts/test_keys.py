"""Ed25519 only: keygen, the workspace key, and refusals by name."""

from __future__ import annotations

import hashlib
import stat
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa, x25519

from changeloop.cli.main import main
from changeloop.signing.keys import (
    KeyRefused,
    generate_private_key,
    keyid,
    load_private_key,
    load_public_key,
    private_pem,
    public_pem,
    workspace_key,
)

SPKI = serialization.PublicFormat.SubjectPublicKeyInfo
PEM = serialization.Encoding.PEM


def test_keygen_writes_a_0600_pkcs8_key_and_an_spki_public_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["keygen", "--out", str(tmp_path / "k"), "--json"]) == 0
    key_path, pub_path = tmp_path / "k" / "changeloop.key", tmp_path / "k" / "changeloop.pub"
    assert stat.S_IMODE(key_path.stat().st_mode) == 0o600
    assert key_path.read_text().startswith("-----BEGIN PRIVATE KEY-----")
    assert pub_path.read_text().startswith("-----BEGIN PUBLIC KEY-----")
    pub = load_public_key(pub_path.read_text(), str(pub_path))
    assert keyid(pub) == keyid(load_private_key(key_path).public_key())
    assert f'"keyid": "{keyid(pub)}"' in capsys.readouterr().out
    # never overwrite a key
    assert main(["keygen", "--out", str(tmp_path / "k")]) == 2
    assert "refusing to overwrite" in capsys.readouterr().err


def test_keyid_is_sha256_of_the_raw_public_key() -> None:
    key = generate_private_key().public_key()
    raw = key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    assert keyid(key) == hashlib.sha256(raw).hexdigest()


def test_workspace_key_is_made_once_with_mode_0600(tmp_path: Path) -> None:
    first = workspace_key(tmp_path)
    key_path = tmp_path / ".changeloop" / "keys" / "local.key"
    assert stat.S_IMODE(key_path.stat().st_mode) == 0o600
    assert (tmp_path / ".changeloop" / "keys" / "local.pub").read_bytes() == public_pem(
        first.public_key()
    )
    assert keyid(workspace_key(tmp_path).public_key()) == keyid(first.public_key())


def _rsa() -> str:
    return (
        rsa.generate_private_key(public_exponent=65537, key_size=2048)
        .public_key()
        .public_bytes(PEM, SPKI)
        .decode()
    )


@pytest.mark.parametrize(
    ("pem", "words"),
    [
        (_rsa, "RSA public key"),
        (
            lambda: (
                ec.generate_private_key(ec.SECP256R1())
                .public_key()
                .public_bytes(PEM, SPKI)
                .decode()
            ),
            "EC (ECDSA) public key",
        ),
        (
            lambda: (
                x25519.X25519PrivateKey.generate().public_key().public_bytes(PEM, SPKI).decode()
            ),
            "X25519",
        ),
        (lambda: public_pem(generate_private_key().public_key()).decode() * 2, "2 PEM blocks"),
        (lambda: private_pem(generate_private_key()).decode(), "private key"),
        (lambda: "not a key at all\n", "not a PEM key"),
        (
            lambda: "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n",
            "'CERTIFICATE', not a public key",
        ),
        (
            lambda: "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n",
            "not a readable public key",
        ),
    ],
)
def test_public_key_refusals_name_what_was_given(pem, words: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(KeyRefused) as err:
        load_public_key(pem(), "ci.pub")
    assert words in err.value.reason
    assert err.value.exit_code == 2


def test_private_key_refusals(tmp_path: Path) -> None:
    path = tmp_path / "rsa.key"
    path.write_bytes(
        rsa.generate_private_key(public_exponent=65537, key_size=2048).private_bytes(
            PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    with pytest.raises(KeyRefused, match="RSA private key"):
        load_private_key(path)
    path.write_bytes(public_pem(generate_private_key().public_key()))
    with pytest.raises(KeyRefused, match="not a private key"):
        load_private_key(path)
    with pytest.raises(KeyRefused, match="cannot read"):
        load_private_key(tmp_path / "missing.key")

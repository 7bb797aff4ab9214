"""Ed25519 keys: generation, PEM files, the workspace key, key ids.

Usage::

    key_path, pub_path = write_keypair(Path("ci-keys"), "changeloop")
    private = load_private_key(key_path)
    public = load_public_key(pub_path.read_text(), str(pub_path))
    keyid(public)   # sha256 hex of the 32 raw public key bytes

Ed25519 only, on purpose: one algorithm means no algorithm confusion and no
parameters to get wrong. Every other key type is refused *by name* so the user
knows what they handed us. Private keys are PKCS#8 PEM (unencrypted, mode
0600); public keys are SPKI PEM ("BEGIN PUBLIC KEY").
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import dsa, ec, ed448, rsa, x448, x25519
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from changeloop import fsio
from changeloop.errors import ChangeloopError, FileRefused, Location, Problem
from changeloop.workspace.state import check_state, clear_non_file, unusable

KEY_FILE_LIMIT = 64 * fsio.KIB  # a PEM key is a few hundred bytes
_PEM_BEGIN = re.compile(rb"-----BEGIN ([A-Z0-9 ]+)-----")
_ONLY = "changeloop accepts Ed25519 only"
_FIX = "give the Ed25519 public key made by `changeloop keygen` (the .pub file, SPKI PEM)"
_PRIVATE_FIX = "give the .key file made by `changeloop keygen` (PKCS#8 PEM, unencrypted)"


class KeyRefused(ChangeloopError):
    """A key file that is not what changeloop accepts; exit 2 like other config mistakes."""

    def __init__(self, source: str, message: str, fix: str = _FIX) -> None:
        super().__init__(
            Problem(code="key_refused", message=message, location=Location(source), fix=fix),
            exit_code=2,
        )
        self.reason = message


def generate_private_key() -> Ed25519PrivateKey:
    return Ed25519PrivateKey.generate()


def private_pem(key: Ed25519PrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def public_pem(key: Ed25519PublicKey) -> bytes:
    return key.public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )


def keyid(public_key: Ed25519PublicKey) -> str:
    """sha256 hex of the raw 32-byte public key: stable across PEM spellings."""
    raw = public_key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return hashlib.sha256(raw).hexdigest()


_SIGNER_KEYIDS: dict[int, tuple[Ed25519PrivateKey, str]] = {}  # id(key) -> (key kept alive, id)


def signer_keyid(private_key: Ed25519PrivateKey) -> str:
    """:func:`keyid` of the key's public half, derived once per key object.

    A run signs every receipt with one key; deriving its public key and id for
    each envelope was a measurable share of sealing a thousand receipts.
    """
    known = _SIGNER_KEYIDS.get(id(private_key))
    if known is None or known[0] is not private_key:
        if len(_SIGNER_KEYIDS) > 64:
            _SIGNER_KEYIDS.clear()
        known = _SIGNER_KEYIDS[id(private_key)] = (private_key, keyid(private_key.public_key()))
    return known[1]


def write_keypair(out_dir: Path, stem: str = "changeloop") -> tuple[Path, Path]:
    """Write ``<stem>.key`` (PKCS#8, 0600) and ``<stem>.pub`` (SPKI); refuse to overwrite.

    Both are created exclusively: a name already taken — even by a dangling
    symlink someone planted — is never written through.
    """
    key_path, pub_path = out_dir / f"{stem}.key", out_dir / f"{stem}.pub"
    for path in (key_path, pub_path):
        if os.path.lexists(path):
            raise ChangeloopError(
                Problem(
                    code="key_exists",
                    message=f"{path} already exists; refusing to overwrite a key",
                    location=Location(str(path)),
                    fix="choose another --out directory or move the old key away first",
                ),
                exit_code=2,
            )
    key = generate_private_key()
    out_dir.mkdir(parents=True, exist_ok=True)
    fsio.create_new(key_path, private_pem(key), mode=0o600)  # a racing writer: FileExistsError
    try:
        fsio.create_new(pub_path, public_pem(key.public_key()), mode=0o644)
    except BaseException:
        key_path.unlink(missing_ok=True)
        raise
    return key_path, pub_path


def _refuse_type(obj: object, source: str, private: bool) -> None:
    kind = "private" if private else "public"
    fix = _PRIVATE_FIX if private else _FIX
    names: list[tuple[tuple[type, ...], str]] = [
        ((rsa.RSAPublicKey, rsa.RSAPrivateKey), "an RSA"),
        ((ec.EllipticCurvePublicKey, ec.EllipticCurvePrivateKey), "an EC (ECDSA)"),
        (
            (x25519.X25519PublicKey, x25519.X25519PrivateKey),
            "an X25519 (key-agreement, not signing)",
        ),
        ((x448.X448PublicKey, x448.X448PrivateKey), "an X448 (key-agreement, not signing)"),
        ((ed448.Ed448PublicKey, ed448.Ed448PrivateKey), "an Ed448"),
        ((dsa.DSAPublicKey, dsa.DSAPrivateKey), "a DSA"),
    ]
    for types, name in names:
        if isinstance(obj, types):
            raise KeyRefused(source, f"{source} holds {name} {kind} key; {_ONLY}", fix)
    raise KeyRefused(source, f"{source} holds an unsupported {kind} key; {_ONLY}", fix)


def _one_block(data: bytes, source: str) -> str:
    labels = [m.group(1).decode() for m in _PEM_BEGIN.finditer(data)]
    if not labels:
        raise KeyRefused(source, f"{source} is not a PEM key (no '-----BEGIN' line found)")
    if len(labels) > 1:
        raise KeyRefused(
            source,
            f"{source} holds {len(labels)} PEM blocks ({', '.join(labels)}); give exactly one key",
        )
    return labels[0]


def load_public_key(pem: str | bytes, source: str) -> Ed25519PublicKey:
    """One SPKI PEM block holding an Ed25519 key; anything else refused by name."""
    data = pem.encode() if isinstance(pem, str) else pem
    label = _one_block(data, source)
    if "PRIVATE" in label:
        raise KeyRefused(
            source,
            f"{source} is a private key ({label}) given where a public key belongs;"
            " never hand out the private key",
            fix="give the matching .pub file (`changeloop keygen` writes both)",
        )
    if label == "RSA PUBLIC KEY":
        raise KeyRefused(source, f"{source} holds an RSA public key; {_ONLY}")
    if label != "PUBLIC KEY":
        raise KeyRefused(source, f"{source} holds a PEM '{label}', not a public key")
    try:
        key = serialization.load_pem_public_key(data)
    except (ValueError, TypeError) as exc:
        raise KeyRefused(source, f"{source} is not a readable public key ({exc})") from exc
    if not isinstance(key, Ed25519PublicKey):
        _refuse_type(key, source, private=False)
    assert isinstance(key, Ed25519PublicKey)
    return key


def load_public_key_file(path: Path) -> Ed25519PublicKey:
    try:
        data = fsio.read_regular(path, limit=KEY_FILE_LIMIT, what="public key")
    except FileRefused as exc:
        raise KeyRefused(str(path), f"cannot read public key {path}: {exc.reason}") from exc
    return load_public_key(data, str(path))


def load_private_key(path: Path, *, follow_symlinks: bool = True) -> Ed25519PrivateKey:
    """An unencrypted PKCS#8 PEM Ed25519 private key that only its owner can read.

    Like ssh, a key file with any group or other permission bit is refused:
    someone else could have read it, or swapped it.
    """
    source = str(path)
    fix = _PRIVATE_FIX
    try:
        data, info = fsio.read_regular_stat(
            path, limit=KEY_FILE_LIMIT, what="private key", follow_symlinks=follow_symlinks
        )
    except FileRefused as exc:
        why = f"cannot read private key {path}: {exc.reason}"
        raise KeyRefused(source, why, fix) from exc
    label = _one_block(data, source)
    if "PRIVATE" not in label:
        raise KeyRefused(source, f"{source} holds a PEM '{label}', not a private key", fix)
    try:
        key = serialization.load_pem_private_key(data, password=None)
    except TypeError as exc:
        why = f"{source} is encrypted; changeloop reads unencrypted keys"
        raise KeyRefused(source, why, fix) from exc
    except ValueError as exc:
        raise KeyRefused(source, f"{source} is not a readable private key ({exc})", fix) from exc
    if not isinstance(key, Ed25519PrivateKey):
        _refuse_type(key, source, private=True)
    assert isinstance(key, Ed25519PrivateKey)
    if info.st_mode & 0o077:
        raise KeyRefused(
            source,
            f"permissions {stat.S_IMODE(info.st_mode):04o} for private key {source} are too"
            " open; a private key must not be accessible by group or others",
            f"`chmod 600 {source}`",
        )
    return key


def workspace_key(root: Path) -> Ed25519PrivateKey:
    """The workspace's own key, ``.changeloop/keys/local.key``, made on first use.

    It proves nothing to anyone else: it only keeps local receipts (and the
    cache) tamper-evident. It is used only as a regular, untracked file of mode
    0600 (``state.check_state`` refuses anything else, exit 2); never through
    a symlink.
    """
    check_state(root)
    key_dir = root / ".changeloop" / "keys"
    key_path = key_dir / "local.key"
    if os.path.lexists(key_path):
        return load_private_key(key_path, follow_symlinks=False)
    key = generate_private_key()
    pub_path = key_dir / "local.pub"
    try:
        key_dir.mkdir(parents=True, exist_ok=True)
        try:
            fsio.create_new(key_path, private_pem(key), mode=0o600)
        except FileExistsError:  # another process made it first: use theirs
            return load_private_key(key_path, follow_symlinks=False)
        clear_non_file(pub_path)  # a directory squatting there: damaged state, rebuilt
        fsio.write_atomic(pub_path, public_pem(key.public_key()))
    except OSError as exc:
        raise unusable(key_dir, exc) from exc
    return key

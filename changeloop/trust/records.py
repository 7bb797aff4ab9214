"""What trust resolution decided: plain frozen records, and how every verb prints them.

:class:`Trust` is the one answer :func:`changeloop.trust.resolve` gives: where the
trust came from, each ``external`` provider's trust material as it is judged
(:class:`ProviderTrust`), the keys given on the command line, and what the
checkout changed (:class:`TrustChanged`). ``to_json`` is the ``"trust"`` object of
every verb's ``--json`` document; ``describe`` is the text after ``trust:`` in its
human output (docs/keys-and-ci.md "Where trust comes from").
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from changeloop.errors import Location
from changeloop.model import Plan, Provider, TrustedKey
from changeloop.signing.keys import keyid, load_public_key

__all__ = ["ProviderTrust", "Source", "Trust", "TrustChanged"]

Source = Literal["rev", "keyring", "command-line", "checkout"]
KIND = "trust-changed"


@dataclass(frozen=True)
class ProviderTrust:
    """An ``external`` provider's trust material: the fields that decide whom it believes."""

    keys: tuple[TrustedKey, ...]
    issuer: str | None
    accepts: tuple[str, ...]
    max_age_s: int | None

    def key_ids(self, role: str | None = None) -> list[str]:
        """Sorted ids of its keys (of one role: ``ci`` or ``authority``)."""
        return sorted({keyid(public_key(k)) for k in self.keys if role is None or k.role == role})

    def to_json(self) -> dict[str, Any]:
        return {
            "keys": self.key_ids(),
            "issuer": self.issuer,
            "accepts": sorted(self.accepts),
            "maxAge": self.max_age_s,
        }


@dataclass(frozen=True)
class TrustChanged:
    """One field of one provider's trust material that the checkout holds otherwise."""

    provider: str
    # ci.publicKey, ci.issuer, authority.publicKey, authority.name, accepts, maxAge, provider
    field: str
    message: str
    location: Location | None = None  # where the checkout says it

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": KIND,
            "provider": self.provider,
            "field": self.field,
            "message": self.message,
        }

    def finding(self) -> dict[str, Any]:
        """The shared finding shape (schemas/finding.json)."""
        out: dict[str, Any] = {"kind": KIND, "message": self.message, "severity": "warning"}
        if self.location is not None:
            out["file"] = self.location.path
            if self.location.line is not None:
                out["line"] = self.location.line
        return out


@dataclass(frozen=True)
class Trust:
    """Where a verb's trust comes from, and what it trusts (see the module's docstring)."""

    source: Source
    providers: Mapping[str, ProviderTrust]  # external provider -> material as judged
    command_line: tuple[Ed25519PublicKey, ...] = ()  # --public-key: vouch for any receipt
    rev: str | None = None
    commit: str | None = None
    keyring: Path | None = None
    keyring_sha256: str | None = None
    changed: tuple[TrustChanged, ...] = ()

    def apply(self, plan: Plan) -> Plan:
        """``plan`` with each ``external`` provider judging by this trust's material.

        A provider whose material is unchanged stays the very same record, so its
        wiring digest (which covers its keys) is the one receipts were made with.
        """
        providers = dict(plan.providers)
        for name, provider in plan.providers.items():
            material = self.providers.get(name)
            if provider.adapter != "external" or material is None:
                continue
            if material == of_provider(provider):
                continue
            providers[name] = replace(
                provider,
                trusted_keys=material.keys,
                issuer=material.issuer,
                accepts=material.accepts,
                max_age_s=material.max_age_s,
            )
        return replace(plan, providers=providers)

    def command_line_ids(self) -> list[str]:
        return sorted({keyid(k) for k in self.command_line})

    def key_ids(self) -> list[str]:
        """Every key trusted for receipts made elsewhere (the workspace key is not one)."""
        ids = {kid for material in self.providers.values() for kid in material.key_ids()}
        return sorted(ids | set(self.command_line_ids()))

    def to_json(self) -> dict[str, Any]:
        """The ``"trust"`` object, the same in every verb's document."""
        return {
            "source": self.source,
            "rev": self.rev,
            "commit": self.commit,
            "keyring": str(self.keyring) if self.keyring is not None else None,
            "sha256": self.keyring_sha256,
            "keys": self.key_ids(),
            "commandLine": self.command_line_ids(),
            "providers": {name: m.to_json() for name, m in sorted(self.providers.items())},
            "changed": [c.to_json() for c in self.changed],
        }

    def findings(self) -> list[dict[str, Any]]:
        return [c.finding() for c in self.changed]

    def describe(self) -> str:
        """``REV <commit> (<rev>)``, ``keyring <sha256> (<path>)``, ``this checkout``…"""
        if self.source == "rev":
            said = f"REV {self.commit} ({self.rev})"
        elif self.source == "keyring":
            said = f"keyring {self.keyring_sha256} ({self.keyring})"
        elif self.source == "command-line":
            said = "command line"
        else:
            said = "this checkout"
        if self.keyring is not None and self.source != "keyring":
            said += f"; keyring {self.keyring_sha256} ({self.keyring})"
        if self.command_line:
            ids = ", ".join(k[:16] for k in self.command_line_ids())
            said += f"; --public-key {ids}"
        return said

    def lines(self) -> list[str]:
        """What a verb prints about its trust: the source, then each ``trust-changed``."""
        return [f"trust: {self.describe()}"] + [f"  {KIND}: {c.message}" for c in self.changed]


def of_provider(provider: Provider) -> ProviderTrust:
    """The trust material a provider's own wiring holds."""
    return ProviderTrust(
        keys=tuple(provider.trusted_keys),
        issuer=provider.issuer,
        accepts=tuple(provider.accepts),
        max_age_s=provider.max_age_s,
    )


def public_key(key: TrustedKey) -> Ed25519PublicKey:
    return load_public_key(key.public_key_pem, key.source)

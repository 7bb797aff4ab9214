"""Which keys ``gate`` trusts, and what a committed receipt's key may speak for.

Example::

    keys = [*external_keys(plan), *(Trusted(k) for k in public_keys)]
    scope = committed_scope(plan, public_keys)
    scope.refusal(verified, "receipts/test.json")   # None, or why that key may not say so
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from changeloop.model import Plan, Provider
from changeloop.signing.keys import keyid, load_private_key, load_public_key
from changeloop.signing.verify import Trusted, Verified

# Sign-offs (`receipt sign`) carry no wiring: they bind content, capability and claims.
SIGN_OFF_ADAPTERS = frozenset({"signed", "receipt-sign"})


def workspace_public_key(root: Path) -> Ed25519PublicKey | None:
    """The workspace key's public half; gate never makes a key (it runs nothing)."""
    key_path = root / ".changeloop" / "keys" / "local.key"
    if not key_path.is_file():
        return None
    return load_private_key(key_path).public_key()


def external_keys(plan: Plan) -> list[Trusted]:
    """Every key an ``external`` provider of the change trusts, named by that provider."""
    return [
        Trusted(load_public_key(k.public_key_pem, k.source), issuer=k.name)
        for p in plan.providers.values()
        if p.adapter == "external"
        for k in p.trusted_keys
    ]


@dataclass(frozen=True)
class Scope:
    """What a committed receipt's signing key may speak for (docs/threat-model.md).

    A key named by an ``external`` provider vouches for sign-offs of that
    provider's capability and for ``prove`` receipts of the providers it
    ``accepts``; a ``--public-key`` given on the command line vouches for all.
    """

    by_key: Mapping[str, tuple[Provider, ...]]
    unrestricted: frozenset[str]
    externals: tuple[Provider, ...] = ()  # every external provider of the plan

    def admitting(self, verified: Verified) -> tuple[Provider, ...]:
        """The external providers that take this receipt (its ``maxAge`` is theirs).

        A key given on the command line vouches for any receipt: then every external
        provider of the receipt's capability (sign-off) or accepting its maker admits it.
        """
        unrestricted = verified.keyid in self.unrestricted
        providers = self.externals if unrestricted else self.by_key.get(verified.keyid, ())
        ext = verified.extension
        if ext.get("adapter") in SIGN_OFF_ADAPTERS:
            return tuple(p for p in providers if p.capability == ext["capability"])
        return tuple(p for p in providers if ext["provider"] in p.accepts)

    def refusal(self, verified: Verified, what: str) -> str | None:
        if verified.keyid in self.unrestricted:
            return None
        ext = verified.extension
        providers = self.by_key.get(verified.keyid, ())
        if ext.get("adapter") in SIGN_OFF_ADAPTERS:
            if any(p.capability == ext["capability"] for p in providers):
                return None
            return (
                f"{what} is a sign-off for capability {ext['capability']!r}; the key that "
                "signed it is trusted by no external provider of that capability"
            )
        if any(ext["provider"] in p.accepts for p in providers):
            return None
        names = ", ".join(sorted(p.name for p in providers)) or "none"
        return (
            f"{what} was made by prove for provider {ext['provider']!r}, but no external "
            f"provider trusting its key (trusted by: {names}) lists it in `accepts`"
        )


def committed_scope(plan: Plan, extra: Sequence[Ed25519PublicKey]) -> Scope:
    """The scope of every key that may sign a committed or imported receipt."""
    by_key: dict[str, list[Provider]] = {}
    for p in plan.providers.values():
        if p.adapter != "external":
            continue
        for k in p.trusted_keys:
            kid = keyid(load_public_key(k.public_key_pem, k.source))
            by_key.setdefault(kid, []).append(p)
    return Scope(
        by_key={k: tuple(v) for k, v in by_key.items()},
        unrestricted=frozenset(keyid(k) for k in extra),
        externals=tuple(p for p in plan.providers.values() if p.adapter == "external"),
    )

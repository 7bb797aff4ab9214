"""Decide where a verb's trust comes from: the one rule every verb follows.

Example::

    trust = resolve(plan, TrustRequest(trust_from="main", public_keys=(Path("ci.pub"),)))
    plan = trust.apply(plan)      # external providers judge with main's material
    trust.changed                 # what the checkout holds otherwise (trust-changed)

The rule (docs/keys-and-ci.md "Where trust comes from"):

- ``--trust-from REV``: each ``external`` provider's trust material — keys (inline
  or ``publicKeyFile``, resolved at REV), issuer, authority names, ``accepts``,
  ``maxAge`` — is REV's (:mod:`~changeloop.trust.at_rev`). Where the checkout holds
  other material, that is a ``trust-changed`` finding naming provider and field, and
  REV's is used. A provider (or the whole change) that REV does not hold trusts no
  key of the change's own: only the keyring's and the command line's.
- ``--trust-keyring FILE`` (issuer -> keys, :mod:`~changeloop.trust.keyring`): each
  external provider trusts the keyring's keys for the issuer and authority names it
  says; without ``--trust-from`` these replace the checkout's keys.
- ``--public-key PEM``: vouches for any receipt, in the verbs that read receipts
  (gate, summary, report, receipt import), as it always did.
- Nothing given: the checkout's material, named as such (``this checkout``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from changeloop.errors import Location
from changeloop.model import Plan, Provider, TrustedKey
from changeloop.signing.keys import load_public_key_file
from changeloop.trust.at_rev import AtRev, read_at_rev
from changeloop.trust.keyring import Keyring, load_keyring
from changeloop.trust.records import ProviderTrust, Source, Trust, TrustChanged, of_provider

__all__ = ["TrustRequest", "resolve"]


@dataclass(frozen=True)
class TrustRequest:
    """What the command line asked for (``--trust-from``, ``--trust-keyring``, ``--public-key``)."""

    trust_from: str | None = None
    keyring: Path | None = None
    public_keys: tuple[Path, ...] = ()

    @property
    def given(self) -> bool:
        return self.trust_from is not None or self.keyring is not None or bool(self.public_keys)


def resolve(plan: Plan, request: TrustRequest) -> Trust:
    """The trust ``plan``'s change is judged with under ``request`` (exit 2 on a bad source)."""
    command_line = tuple(load_public_key_file(p) for p in request.public_keys)
    checkout = {n: of_provider(p) for n, p in plan.providers.items() if p.adapter == "external"}
    ring = load_keyring(request.keyring) if request.keyring is not None else None
    at: AtRev | None = None
    changed: tuple[TrustChanged, ...] = ()
    anchor: dict[str, ProviderTrust] = dict(checkout)
    if request.trust_from is not None:
        at = read_at_rev(plan, request.trust_from)
        held = at.providers or {}
        anchor = {
            name: held.get(name) or ProviderTrust((), mine.issuer, mine.accepts, mine.max_age_s)
            for name, mine in checkout.items()
        }
        changed = tuple(_differences(plan, checkout, at))
    if ring is not None:
        anchor = {
            name: _with_keyring(material, checkout[name], ring, keep=at is not None)
            for name, material in anchor.items()
        }
    return Trust(
        source=_source(at, ring, checkout, command_line),
        providers=anchor,
        command_line=command_line,
        rev=at.rev if at else None,
        commit=at.commit if at else None,
        keyring=ring.path if ring else None,
        keyring_sha256=ring.sha256 if ring else None,
        changed=changed,
    )


def _source(
    at: AtRev | None,
    ring: Keyring | None,
    checkout: Mapping[str, ProviderTrust],
    command_line: tuple[object, ...],
) -> Source:
    if at is not None:
        return "rev"
    if ring is not None:
        return "keyring"
    if command_line and not any(m.keys for m in checkout.values()):
        return "command-line"
    return "checkout"


def _with_keyring(
    material: ProviderTrust, mine: ProviderTrust, ring: Keyring, *, keep: bool
) -> ProviderTrust:
    """``material`` trusting the keyring's keys for the names it (else the checkout) says.

    ``keep``: the anchor is another revision, whose keys stay trusted beside the
    keyring's; otherwise the keyring replaces the checkout's own keys.
    """
    names = {(k.role, k.name) for k in material.keys} or {(k.role, k.name) for k in mine.keys}
    keys: list[TrustedKey] = list(material.keys) if keep else []
    for role, name in sorted(names):
        keys += ring.keys(name, role)
    return ProviderTrust(tuple(keys), material.issuer, material.accepts, material.max_age_s)


# Checkout field -> where execution.yaml says it (under providers.<name>).
_FIELD_AT = {
    "ci.publicKey": ("ci",),
    "ci.issuer": ("ci", "issuer"),
    "authority.publicKey": ("authority",),
    "authority.name": ("authority", "name"),
    "accepts": ("accepts",),
    "maxAge": ("maxAge",),
    "provider": (),
}


def _differences(
    plan: Plan, checkout: Mapping[str, ProviderTrust], at: AtRev
) -> list[TrustChanged]:
    """Every field of the checkout's trust material that REV holds otherwise."""
    where = f"{at.rev} ({at.commit[:12]})"
    out: list[TrustChanged] = []
    held = at.providers
    for name, mine in sorted(checkout.items()):
        provider = plan.providers[name]
        theirs = held.get(name) if held is not None else None
        if theirs is None:
            if held is None:
                why = f"change {plan.change.id!r} does not exist at {where}"
            elif name in at.others:
                why = f"it is not an external provider at {where}"
            else:
                why = f"{where} has no provider {name!r} in this change"
            message = (
                f"provider {name!r}: {why}; it trusts no key of the change's own, only"
                " --public-key and --trust-keyring keys"
            )
            out.append(TrustChanged(name, "provider", message, _location(plan, provider, ())))
            continue
        for field, now, then in _fields(mine, theirs):
            if now == then:
                continue
            message = (
                f"provider {name!r}: {field} is {now} in this checkout and {then} at {where};"
                f" judged with {at.rev}'s"
            )
            at_field = _location(plan, provider, _FIELD_AT[field])
            out.append(TrustChanged(name, field, message, at_field))
    for name in sorted(set(held or {}) - set(checkout)):
        message = (
            f"provider {name!r}: external at {where}, and this checkout no longer wires it as"
            " external"
        )
        out.append(TrustChanged(name, "provider", message, None))
    return out


def _fields(mine: ProviderTrust, theirs: ProviderTrust) -> list[tuple[str, str, str]]:
    """(field, the checkout's value, REV's value), each said in words."""

    def keys(m: ProviderTrust, role: str) -> str:
        ids = m.key_ids(role)
        return "key " + ", ".join(k[:12] for k in ids) if ids else "no key"

    def names(m: ProviderTrust, role: str) -> str:
        found = sorted({k.name for k in m.keys if k.role == role})
        return ", ".join(repr(n) for n in found) if found else "unset"

    return [
        ("ci.publicKey", keys(mine, "ci"), keys(theirs, "ci")),
        ("ci.issuer", repr(mine.issuer), repr(theirs.issuer)),
        ("authority.publicKey", keys(mine, "authority"), keys(theirs, "authority")),
        ("authority.name", names(mine, "authority"), names(theirs, "authority")),
        ("accepts", repr(sorted(mine.accepts)), repr(sorted(theirs.accepts))),
        ("maxAge", _age(mine.max_age_s), _age(theirs.max_age_s)),
    ]


def _age(seconds: int | None) -> str:
    return "unset" if seconds is None else f"{seconds} s"


def _location(plan: Plan, provider: Provider, field: tuple[str, ...]) -> Location | None:
    marks = plan.execution.marks if plan.execution is not None else None
    if marks is None:
        return provider.location
    return marks.location(("providers", provider.name, *field))

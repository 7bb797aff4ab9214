"""``prove --cache-from DIR``: the run's view of a shared cache (docs/scale-out.md).

A receipt CI signed counts only when its fingerprint equals the one this run
computes *as that issuer would*: the fingerprint names the issuer, so each
trusted key's issuer gets its own ``Fingerprinter`` (made once, on first need).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from changeloop.caching import shared as shared_cache
from changeloop.model import ContentIdentity, Plan, Provider
from changeloop.run.fingerprinter import Fingerprinter

__all__ = ["open_cache_from"]


def open_cache_from(
    directory: Path,
    plan: Plan,
    *,
    fingerprint: Callable[[Provider], str],
    issuer: str,
    sandbox: str,
    identity: Callable[[str], ContentIdentity],
    hmac_key: bytes,
    state_path: Path,
) -> shared_cache.SharedCache:
    """Receipts another machine signed, trusted by the change's ``ci`` keys.

    ``fingerprint``: this run's own (memoised) fingerprint, used as is when a key's
    issuer is this run's ``issuer``.
    """

    def make(other: str) -> Fingerprinter:
        return Fingerprinter(
            plan,
            identity,
            sandbox=sandbox,
            issuer=other,
            hmac_key=hmac_key,
            state_path=state_path,
        )

    return shared_cache.SharedCache(
        directory,
        plan,
        shared_cache.trusted_ci_keys(plan),
        _issuer_fingerprints(plan, issuer, fingerprint, make),
    )


def _issuer_fingerprints(
    plan: Plan,
    own_issuer: str,
    own: Callable[[Provider], str],
    make: Callable[[str], Fingerprinter],
) -> Callable[[Provider, str], str]:
    """(provider, issuer) -> its fingerprint as a run issued by ``issuer`` computes it."""
    memo: dict[str, tuple[Fingerprinter, dict[str, str]]] = {}

    def of(provider: Provider, issuer: str) -> str:
        if issuer == own_issuer:
            return own(provider)
        if issuer not in memo:
            memo[issuer] = (make(issuer), {})
        fpr, done = memo[issuer]
        for dep in provider.depends_on:
            if dep not in done and dep in plan.providers:
                of(plan.providers[dep], issuer)
        if provider.name not in done:
            done[provider.name] = fpr.fingerprint(provider, done)
        return done[provider.name]

    return of

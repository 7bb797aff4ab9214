"""What a workspace-signed receipt's fingerprint would be now, for ``gate``, ``summary`` and
``report`` (which run nothing).

A receipt this workspace made records its fingerprint: content, wiring *and* the
environment it ran in (executables, installed dependencies, every passed variable).
``gate`` compares content and wiring itself; the environment only a fingerprint
covers, so for a local receipt it asks this function for the provider's
fingerprint as a run would compute it now, in the receipt's own sandbox mode and
issuer. A different one means something the receipt depended on changed:
``stale-environment``::

    current = current_fingerprints(plan)   # None without a workspace key
    current and current(ext)               # "sha256:…" or None (not a planned provider)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from changeloop.caching.local import NEVER_CACHED
from changeloop.fingerprints.fingerprint import SCHEMA_VERSION
from changeloop.git.identity import content_identity
from changeloop.model import ContentIdentity, Plan, Provider
from changeloop.run.fingerprinter import Fingerprinter, hmac_key

__all__ = ["CurrentFingerprint", "current_fingerprints"]

CurrentFingerprint = Callable[[Mapping[str, Any]], str | None]


def current_fingerprints(plan: Plan) -> CurrentFingerprint | None:
    """A function from a receipt's ``predicate.changeloop`` to its provider's fingerprint
    now; None when the workspace has no key (then it made no receipt either)."""
    from changeloop.signing.keys import load_private_key  # noqa: PLC0415 - signing.keys pulls in cryptography; only the current fingerprints need it

    key_path = plan.root / ".changeloop" / "keys" / "local.key"
    if not key_path.is_file():
        return None
    secret = hmac_key(load_private_key(key_path))
    runs: dict[tuple[str, str], _Run] = {}

    def current(ext: Mapping[str, Any]) -> str | None:
        if ext.get("schema") != SCHEMA_VERSION:
            return None  # made by another receipt schema: its fingerprint meant other things
        if ext.get("adapter") in NEVER_CACHED:
            return None  # judged afresh from what it reads (and its trust) on every reading
        sandbox, issuer = str(ext.get("sandbox") or "none"), str(ext.get("issuer") or "local")
        run = runs.get((sandbox, issuer))
        if run is None:
            run = runs[(sandbox, issuer)] = _Run(plan, sandbox, issuer, secret)
        return run.fingerprint(str(ext.get("provider")))

    return current


class _Run:
    """The fingerprints one run with these options would compute (upstream first)."""

    def __init__(self, plan: Plan, sandbox: str, issuer: str, secret: bytes) -> None:
        self._plan = plan
        self._identities: dict[str, ContentIdentity] = {}
        self._untracked = sandbox != "worktree"
        self._fingerprinter = Fingerprinter(
            plan,
            self._identity,
            sandbox=sandbox,
            issuer=issuer,
            hmac_key=secret,
            state_path=plan.root / ".changeloop",
        )
        self._done: dict[str, str] = {}

    def _identity(self, repo: str) -> ContentIdentity:
        if repo not in self._identities:
            path = self._plan.repositories[repo].path
            self._identities[repo] = content_identity(path, include_untracked=self._untracked)
        return self._identities[repo]

    def fingerprint(self, name: str) -> str | None:
        provider = _planned(self._plan, name)
        if provider is None:
            return None
        return self._of(provider, ())

    def _of(self, provider: Provider, path: tuple[str, ...]) -> str:
        if provider.name not in self._done:
            upstream = {}
            for dep in provider.depends_on:
                found = self._plan.providers.get(dep)
                if found is not None and dep not in path:
                    upstream[dep] = self._of(found, (*path, provider.name))
            self._done[provider.name] = self._fingerprinter.fingerprint(provider, upstream)
        return self._done[provider.name]


def _planned(plan: Plan, name: str) -> Provider | None:
    """The planned provider issuing receipts under ``name`` (a discovery alias too)."""
    if name in plan.providers:
        return plan.providers[name]
    for provider in plan.providers.values():
        if provider.discovery_provider == name:
            return provider
    return None

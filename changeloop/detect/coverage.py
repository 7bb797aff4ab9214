"""Which required (capability, repository) pairs a set of providers covers.

Shared by ``evidence init`` (what stays unresolved after writing) and
``evidence doctor`` (what to explain).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from changeloop.model import Evidence, Provider, Repository


def provider_covers(provider: Provider, repos: Iterable[str]) -> set[tuple[str, str]]:
    """(capability, repository) pairs one provider can issue receipts for."""
    names = list(repos)
    if provider.adapter == "contract-digest" and provider.contract:
        targets = list(provider.contract)
    elif provider.repository is not None:
        targets = [provider.repository]
    elif len(names) == 1:
        targets = names
    else:
        targets = []  # preflight refuses it until it names a repository
    capabilities = {provider.capability}
    if provider.adapter == "test-discovery":
        capabilities.add("discovery")
    if provider.adapter == "playwright":
        capabilities.update(provider.outputs)
    if provider.adapter == "external":
        targets = names  # an external receipt binds every repository's content
    return {(c, r) for c in capabilities for r in targets}


def effective(
    configured: Mapping[str, Provider], derived: Mapping[str, Provider]
) -> dict[str, Provider]:
    """execution.yaml providers replace derived ones of the same name (docs/execution-yaml.md)."""
    merged = dict(derived)
    merged.update(configured)
    return merged


def unresolved(
    needs: Mapping[str, list[str]],
    repositories: Mapping[str, Repository],
    providers: Iterable[Provider],
) -> list[tuple[str, str]]:
    """Required (capability, repository) pairs no provider covers, in requirement order."""
    covered: set[tuple[str, str]] = set()
    for provider in providers:
        covered |= provider_covers(provider, repositories)
    return [(c, r) for c, repos in needs.items() for r in repos if (c, r) not in covered]


def test_capabilities_declared(evidence: Evidence) -> bool:
    """Whether the change asks for any test capability at all."""
    wanted = set(evidence.requires)
    for claim in evidence.claims.values():
        wanted.update(claim.requires)
    return bool(wanted & {"test", "discovery", "browser"})

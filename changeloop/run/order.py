"""The scheduler's ordering hint: which providers will likely be reused from the cache.

A provider whose pass is likely cached is estimated to take no time, so the
critical-path-first scheduler starts the ones that will really run first and
reuses the rest while they run. Only a hint: whether a pass is reused is
decided when the provider's turn comes (``engine._cached``).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from changeloop.caching.local import NEVER_CACHED, entry_path
from changeloop.errors import ChangeloopError
from changeloop.model import Plan, Provider

__all__ = ["likely_cached"]


def likely_cached(
    plan: Plan,
    cache_dir: Path,
    fingerprint: Callable[[Provider], str],
    unchanged: Callable[[Provider], bool] | None = None,
) -> set[str]:
    """Providers with a cache entry for their fingerprint, or ``unchanged`` ones.

    Only providers without dependencies are looked at (a fingerprint names its
    upstream's), and only in repositories without ``setup`` (whose commands may
    install a tool the environment part resolves: such fingerprints keep being
    computed where they were). A provider ``unchanged`` says is unchanged since the
    verified no-change record (``Fingerprinter.inputs_unchanged``) counts without its
    fingerprint: those are computed while the providers that run are running.
    """
    hits = set()
    for provider in plan.providers.values():
        if provider.depends_on or provider.adapter in NEVER_CACHED:
            continue
        repos = provider.settled.repositories
        if any(plan.repositories[r].setup for r in repos):
            continue
        if unchanged is not None and unchanged(provider):
            hits.add(provider.name)
            continue
        try:
            fp = fingerprint(provider)
        except (ChangeloopError, OSError):
            continue  # raised again where the provider's run computes it
        if entry_path(cache_dir, fp).is_file():
            hits.add(provider.name)
    return hits

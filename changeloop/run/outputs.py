"""Reuse that a clean run would repeat: what a cached provider would have made is there
when a provider that depends on it runs.

A provider reused from the cache made nothing in this run's sandbox. That is only
right while none of its dependents (transitively) runs: a dependent that runs reads
what it makes. So, at a cached provider's turn (``engine``), when some dependent
must run it is *needed*: its declared ``artifacts`` are restored from its cache
entry into its repository's sandbox (``changeloop.caching.artifacts``), or — none
declared, a blob missing or damaged, a remote executor — it runs again.

A dependent *must run* when it would not be reused itself: no verifying cache entry
for its fingerprint, an open identity, a service port taken, or it is needed and
cannot restore what it makes either. Fingerprints asked here for dependents that
have not had their turn are kept apart from the run's own (``RunStages.fingerprint``
computes them in dependency order when their turn comes).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import anyio

from changeloop.caching import artifacts
from changeloop.caching.local import NEVER_CACHED
from changeloop.model import Plan, Provider
from changeloop.run.cache_reuse import verified_passes
from changeloop.run.provider_services import ports_taken

if TYPE_CHECKING:
    from changeloop.run.stages import RunStages
    from changeloop.services import ServiceManager

__all__ = ["dependents", "keep", "keeps", "needed", "restore"]


def dependents(plan: Plan) -> dict[str, tuple[str, ...]]:
    """Provider -> the providers that name it in ``dependsOn``."""
    out: dict[str, list[str]] = {name: [] for name in plan.providers}
    for provider in plan.providers.values():
        for dep in provider.depends_on:
            if dep in out:
                out[dep].append(provider.name)
    return {name: tuple(users) for name, users in out.items()}


class _Look:
    """One question (is this provider needed?) over the plan, memoised while it is asked."""

    def __init__(self, run: RunStages, services: ServiceManager) -> None:
        self.run = run
        self.services = services
        self.users = dependents(run.plan)
        self.fingerprints: dict[str, str] = dict(run.fingerprints)
        self.must: dict[str, bool] = {}

    def fingerprint(self, provider: Provider) -> str:
        if provider.name not in self.fingerprints:
            upstream = {}
            for dep in provider.depends_on:
                found = self.run.plan.providers.get(dep)
                if found is not None:
                    upstream[dep] = self.fingerprint(found)
            fp = self.run.fingerprinter.fingerprint(provider, upstream)
            self.fingerprints[provider.name] = fp
        return self.fingerprints[provider.name]

    def needed(self, name: str, seen: frozenset[str] = frozenset()) -> bool:
        return any(self.must_run(user, seen | {name}) for user in self.users.get(name, ()))

    def must_run(self, name: str, seen: frozenset[str]) -> bool:
        if name in self.must:
            return self.must[name]
        if name in seen:  # a cycle (refused by preflight): never a reason to trust a reuse
            return True
        provider = self.run.plan.providers[name]
        if not provider.settled.runs_command:  # reads evidence, makes nothing, needs no files
            answer = False
        elif not self._reused(provider):
            answer = True
        else:
            answer = self.needed(name, seen) and not restorable(self.run, provider, self)
        self.must[name] = answer
        return answer

    def _reused(self, provider: Provider) -> bool:
        run = self.run
        if not run.options.use_cache or provider.adapter in NEVER_CACHED:
            return False
        if run.fingerprinter.identity_open(provider):
            return False
        if ports_taken(run.plan, provider, self.services):
            return False
        fp = self.fingerprint(provider)
        return verified_passes(run.state.cache, fp, run.key.public_key()) is not None


def needed(run: RunStages, provider: Provider, services: ServiceManager) -> bool:
    """Whether a provider that runs depends on ``provider`` (directly or through others
    that must run or restore): then what it makes must be in the sandbox."""
    if not any(provider.name in p.depends_on for p in run.plan.providers.values()):
        return False
    return _Look(run, services).needed(provider.name)


def restorable(run: RunStages, provider: Provider, look: _Look | None = None) -> bool:
    """Whether a cached pass of ``provider`` can put back what it makes."""
    if not provider.artifacts or getattr(run.executor, "remote", False):
        return False
    fp = look.fingerprint(provider) if look is not None else run.fingerprint(provider)
    return artifacts.kept(run.state.cache, fp, run.fingerprinter.hmac) is not None


async def restore(run: RunStages, provider: Provider, workdir: Path) -> bool:
    """Put back what ``provider``'s cache entry kept, into ``workdir``."""
    if not restorable(run, provider):
        return False
    fp = run.fingerprint(provider)

    return await anyio.to_thread.run_sync(
        artifacts.restore, run.state.cache, fp, workdir, run.fingerprinter.hmac
    )


def keeps(run: RunStages, provider: Provider, workdirs: Mapping[str, Path]) -> bool:
    """Whether :func:`keep` has anything to do: declared ``artifacts``, made on this machine
    in a repository of ``workdirs`` (the engine hops to a thread only then)."""
    return (
        bool(provider.artifacts)
        and not getattr(run.executor, "remote", False)
        and provider.repository is not None
        and provider.repository in workdirs
    )


def keep(run: RunStages, provider: Provider, workdirs: Mapping[str, Path]) -> None:
    """After a pass: store the files ``provider`` declares it makes (this machine only)."""
    repository = provider.repository
    if repository is None or not keeps(run, provider, workdirs):
        return
    try:
        artifacts.keep(
            run.state.cache,
            run.fingerprint(provider),
            workdirs[repository],
            provider.artifacts,
            run.fingerprinter.hmac,
        )
    except (OSError, ValueError):
        return  # kept nothing: a later reuse that needs them runs the provider again

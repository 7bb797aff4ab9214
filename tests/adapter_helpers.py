"""The one driver that runs an adapter on a fixture, without the engine.

    ctx = adapter_context(plan, provider, workdir=repo, run_dir=tmp_path / "run")
    outcomes = run_adapter(ctx)

The context is what the engine would build: the repository's workdir, its
content identity (a placeholder unless given), the caller's environment, and the
``LocalExecutor`` for the adapter's job (or ``executor`` to forbid running).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path

import anyio

from changeloop.executors.job import Executor
from changeloop.executors.local import LocalExecutor
from changeloop.model import ContentIdentity, Plan, Provider
from changeloop.outcome import Outcome
from changeloop.providers import registry
from changeloop.providers.base import RunContext

PLACEHOLDER = ContentIdentity(tree="0" * 40, head=None, dirty=False)


def adapter_context(
    plan: Plan,
    provider: Provider,
    *,
    run_dir: Path,
    workdirs: Mapping[str, Path] | None = None,
    identities: Mapping[str, ContentIdentity] | None = None,
    env: Mapping[str, str] | None = None,
    executor: Executor | None = None,
    now: datetime | None = None,
) -> RunContext:
    sources = {name: repo.path for name, repo in plan.repositories.items()}
    repos = registry.ADAPTERS[provider.adapter].repositories(provider, plan)
    return RunContext(
        plan=plan,
        provider=provider,
        workdirs=dict(workdirs) if workdirs is not None else {r: sources[r] for r in repos},
        sources=sources,
        identities=dict(identities)
        if identities is not None
        else dict.fromkeys(repos, PLACEHOLDER),
        run_dir=run_dir,
        env=dict(env) if env is not None else {**os.environ, **provider.env},
        secrets=(),
        now=now or datetime.now(UTC),
        executor=executor or LocalExecutor(),
    )


def run_adapter(ctx: RunContext) -> list[Outcome]:
    """The adapter's outcomes for ``ctx`` (its command, if any, really runs).

    The one driver every adapter test uses, doing what the engine does: an adapter
    with its own ``run`` runs; any other prepares a job, ``ctx.executor`` runs it,
    and the adapter reads the result.
    """
    return anyio.run(drive, ctx)


async def drive(ctx: RunContext) -> list[Outcome]:
    adapter = registry.ADAPTERS[ctx.provider.adapter]
    if adapter.run is not None:
        return await adapter.run(ctx)
    prepared = adapter.prepare(ctx)
    if isinstance(prepared, list):
        return prepared
    return adapter.read(prepared, await ctx.executor.run(prepared))

"""What a Dask run checks before its first job: content it can ship, workers it can use.

Example (``DaskExecutor``)::

    trees = await content_trees(plan, mode)             # a submodule refuses the run
    await check_environment(client, plan, address)      # our worker side, the same tools

Each refusal is exit 2 before anything runs: ``dask_submodule_unsupported``,
``dask_worker_failed`` (the workers cannot load this changeloop's worker side),
``environment-mismatch`` (workers resolve a tool to different bytes),
``dask_unreachable`` (they did not answer).
"""

from __future__ import annotations

from functools import partial
from typing import Any

import anyio

from changeloop.errors import ChangeloopError, Problem
from changeloop.executors import content, worker
from changeloop.executors.shipping import executables, shipped_repositories
from changeloop.executors.worker_processes import PLUGIN_NAME, SweepOnStart
from changeloop.git.identity import content_identity
from changeloop.model import Plan, SandboxMode

ASK_TIMEOUT_S = 60


async def content_trees(plan: Plan, mode: SandboxMode) -> dict[str, str]:
    """The content tree of every repository a job needs; a submodule refuses the run.

    A submodule is a commit id in the content tree: its files are not part of
    the tree a worker can check, so they cannot travel by tree id (exit 2).
    """
    found: list[str] = []
    trees: dict[str, str] = {}
    for repo in shipped_repositories(plan):
        path = plan.repositories[repo].path
        ident = await anyio.to_thread.run_sync(
            partial(content_identity, path, include_untracked=mode != "worktree")
        )
        trees[repo] = ident.tree
        links = await anyio.to_thread.run_sync(content.submodules, path, ident.tree)
        found.extend(f"{repo}: {link}" if len(plan.repositories) > 1 else link for link in links)
    if found:
        raise ChangeloopError(
            Problem(
                code="dask_submodule_unsupported",
                message="--executor dask ships a repository's content by its git tree, "
                "and a submodule is only a commit id in that tree; these submodules "
                f"cannot be shipped: {', '.join(found)}",
                fix="prove this change with --executor local (or vendor the submodule's "
                "files into the repository)",
            )
        )
    return trees


async def _register_sweep(client: Any, address: str) -> None:
    """Every worker that starts (a killed one's replacement too) first ends what dead
    workers' jobs left on its machine: the scheduler hands the plugin to each that joins."""
    try:
        await client.register_plugin(SweepOnStart(), name=PLUGIN_NAME)
    except Exception as exc:  # a worker's changeloop cannot run ours: said, not a crash
        raise ChangeloopError(
            Problem(
                code="dask_worker_failed",
                message=f"the Dask workers at {address} could not start changeloop's "
                f"worker side: {type(exc).__name__}: {exc}",
                fix="install the same changeloop version as here on every worker "
                "(pip install 'changeloop[dask]')",
            )
        ) from exc


async def check_environment(client: Any, plan: Plan, address: str) -> None:
    """Every worker runs our worker side and resolves each executable to the same bytes.

    The two questions go to the workers at once (each is a round trip to all of them).
    """
    refused: list[ChangeloopError] = []

    async def ask(question: Any) -> None:
        try:
            await question()
        except ChangeloopError as exc:
            refused.append(exc)

    async with anyio.create_task_group() as group:
        group.start_soon(ask, partial(_register_sweep, client, address))
        group.start_soon(ask, partial(_check_executables, client, plan))
    if refused:
        raise refused[0]


async def _check_executables(client: Any, plan: Plan) -> None:
    """Every worker must resolve each executable the plan runs to the same bytes.

    One question to every worker for all of the plan's executables at once.
    """
    argv0s = sorted(executables(plan))
    if not argv0s:
        return
    try:
        with anyio.fail_after(ASK_TIMEOUT_S):
            answers: dict[str, dict[str, str]] = await client.run(
                worker.executable_identities, argv0s
            )
    except TimeoutError as exc:
        raise ChangeloopError(
            Problem(
                code="dask_unreachable",
                message=f"the workers did not answer within {ASK_TIMEOUT_S} s "
                f"(asked which {', '.join(map(repr, argv0s))} they run)",
                fix="check the cluster's workers (dask worker logs)",
            )
        ) from exc
    for argv0 in argv0s:
        seen = {w: parts.get(argv0, "") for w, parts in answers.items()}
        if len(set(seen.values())) > 1:
            detail = ", ".join(f"{w}: {d}" for w, d in sorted(seen.items()))
            raise ChangeloopError(
                Problem(
                    code="environment-mismatch",
                    message=f"the workers disagree on executable {argv0!r} ({detail})",
                    fix="install the same tools on every worker (or restrict the "
                    "cluster to identical workers)",
                )
            )

"""What of a plan reaches the Dask workers: repositories by content, and the tools they run.

Only the repositories a command runs in or a service lives in are shipped, each
as one archive of its content as its identity saw it; every worker must resolve
the plan's executables to the same bytes (``DaskExecutor.check_environment``).
"""

from __future__ import annotations

from pathlib import Path

from changeloop.executors import content
from changeloop.model import Plan, SandboxMode
from changeloop.sandboxes.copy import list_files


def shipped_repositories(plan: Plan) -> list[str]:
    """The repositories whose content a worker needs: where commands run, where services live."""
    out: dict[str, None] = {}
    for provider in plan.providers.values():
        facts = provider.settled
        if facts.runs_command:
            out.update(dict.fromkeys(facts.repositories))
        for name in provider.services:
            service = plan.services.get(name)
            repo = service.repository if service else None
            out[repo or provider.repository or ""] = None
    return [r for r in out if r in plan.repositories]


def executables(plan: Plan) -> set[str]:
    """The argv[0] of every command the plan runs that a worker resolves on its PATH."""
    out: set[str] = set()
    for provider in plan.providers.values():
        facts = provider.settled
        if not facts.runs_command:
            continue
        command = facts.command
        if command:
            out.add(command[0])
    for repository in plan.repositories.values():
        out.update(argv[0] for argv in repository.setup if argv)
    return {a for a in out if a.startswith("/") or "/" not in a}


def pack_repository(plan: Plan, repo: str, mode: SandboxMode, state_dir: Path) -> bytes:
    """The repository's content as its identity saw it: the user's files and link texts.

    Read from the checkout, not the local sandbox (which re-points absolute
    links); what changed meanwhile is caught by the worker's tree check.
    """
    source = plan.repositories[repo].path.resolve()
    if mode == "worktree":
        return content.pack(source, content.tracked_files(source))
    return content.pack(source, list_files(source, state_dir.resolve()))

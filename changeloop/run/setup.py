"""A repository's ``setup`` commands, run once in its sandbox before its providers.

The first failing command comes back as a :class:`SetupFailure`, which the run
seals as a ``setup`` receipt under the pseudo provider ``setup-<repository>``;
the repository's providers are then inconclusive ("setup of repository …
failed").
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from changeloop.executors.job import Executor, Job, SandboxSpec
from changeloop.masking import env_from_names
from changeloop.model import AdapterFacts, Plan, Provider, SandboxMode
from changeloop.outcome import Outcome
from changeloop.run.seal import Timing

SETUP_TIMEOUT_MS = 30 * 60 * 1000


@dataclass(frozen=True)
class SetupFailure:
    """The first setup command that failed, as its pseudo provider's outcome."""

    provider: Provider  # setup-<repository>
    outcome: Outcome
    timing: Timing


async def run_setup(
    plan: Plan,
    repo: str,
    workdir: Path,
    *,
    tree: str,
    mode: SandboxMode,
    executor: Executor,
    run_dir: Path,
) -> SetupFailure | None:
    """Run the repository's setup commands in order; the first failure, or None."""
    repository = plan.repositories[repo]
    masked = tuple(env_from_names(plan))
    for index, argv in enumerate(repository.setup):
        pseudo = Provider(
            name=f"setup-{repo}",
            adapter="command",
            capability="setup",
            repository=repo,
            command=tuple(argv),
            facts=AdapterFacts(
                repositories=(repo,),
                capabilities=("setup",),
                command=tuple(argv),
                inputs={},
                runs_command=True,
            ),
        )
        job = Job(
            provider=pseudo,
            wiring="",
            argv=tuple(argv),
            sandbox=SandboxSpec(repo, tree, mode, str(workdir)),
            masked=masked,
            timeout_ms=SETUP_TIMEOUT_MS,
            log_dir=str(run_dir / f"setup-{repo}"),
            log_name=f"setup-{index}",
            context={"setup": index},  # a remote executor runs it before the sandbox is set up
        )
        result = await executor.run(job)
        if result.exit_code == 0:
            continue
        failure = result.failure[2] if result.failure else None  # e.g. content-mismatch
        why = result.spawn_error or failure or f"exited {result.exit_code}"
        outcome = Outcome(
            capability="setup",
            status="fail",
            reason=f"setup {' '.join(argv)}: {why}",
            exit_code=result.exit_code,
            command=tuple(argv),
        )
        where = {"kind": "dask", "worker": result.worker} if result.worker else None
        timing = Timing(
            result.started, datetime.now(UTC), result.log_sha256, result.log_tail, where
        )
        return SetupFailure(pseudo, outcome, timing)
    return None

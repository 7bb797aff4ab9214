"""The interface every adapter module implements, and the records it returns.

An adapter is a plain module exposing the names of :class:`Adapter` (the
pre-commit idea: mypy checks each module against this Protocol, and
``registry.ADAPTERS`` is a literal dict — no plug-in discovery).

An adapter's ``run`` turns one provider into one :class:`Outcome` per receipt
it issues; the engine adds everything generic (fingerprint, subjects, timing,
log digest, signature) when it turns outcomes into receipts.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any, Protocol

from changeloop.errors import Problem
from changeloop.executors.job import Executor, Job, JobResult, SandboxSpec, env_delta
from changeloop.executors.local import LocalExecutor
from changeloop.masking import masked_names
from changeloop.model import (
    ClaimScope,
    ContentIdentity,
    Plan,
    Provider,
    SandboxMode,
)
from changeloop.outcome import Outcome
from changeloop.passenv import Snapshot


@dataclass(frozen=True)
class RunContext:
    """Everything an adapter may use while running one provider.

    An adapter that runs a command builds it with :meth:`job` and hands it to
    ``executor`` (docs/ARCHITECTURE.md); it never starts a process itself.
    """

    plan: Plan
    provider: Provider
    workdirs: Mapping[str, Path]  # repository -> where it runs (sandbox or in place)
    sources: Mapping[str, Path]  # repository -> the user's checkout (external reads here)
    identities: Mapping[str, ContentIdentity]  # repository -> content identity
    run_dir: Path  # this provider's own directory under .changeloop/runs/<run-id>/
    # the caller's env cut to what the provider may see (changeloop.passenv) + its env +
    # envFrom, ready to pass on
    env: Mapping[str, str]
    secrets: tuple[str, ...]  # envFrom values: redact from anything written
    now: datetime
    executor: Executor = field(default_factory=LocalExecutor)
    wiring: str = ""  # the provider's wiring digest
    sandbox_mode: SandboxMode = "none"
    # the run's environment as it started (None: os.environ as it is when a job is built)
    environ: Snapshot | None = None

    def job(
        self,
        argv: Sequence[str],
        *,
        repo: str,
        env: Mapping[str, str],
        log_name: str,
        cwd: Path | None = None,
    ) -> Job:
        """The provider's command as a :class:`Job` (env as differences from the executor's).

        ``cwd``: where it runs when not the repository's workdir (mutation's own copy).
        """
        # Differences from what the executor starts from: its environment cut down to what
        # this provider may see (changeloop.passenv), so nothing else travels as a value.
        snapshot = Snapshot(os.environ) if self.environ is None else self.environ
        base = snapshot.cut(self.provider.pass_env, self.provider.env_from)
        values, unset = env_delta(env, base, self.provider.env_from)
        identity = self.identities.get(repo)
        return Job(
            provider=self.provider,
            wiring=self.wiring,
            argv=tuple(argv),
            sandbox=SandboxSpec(
                repository=repo,
                tree=identity.tree if identity else "",
                mode=self.sandbox_mode,
                path=str(cwd if cwd is not None else self.workdirs[repo]),
            ),
            env=values,
            unset=unset,
            env_from=self.provider.env_from,
            masked=masked_names(self.plan, snapshot.environ),
            services=self.provider.services,
            timeout_ms=self.provider.timeout_ms,
            log_dir=str(self.run_dir),
            log_name=log_name,
            claims=self.claim_scope(),
            # the provider's own folder of the repository (a workspace member); a job
            # run elsewhere (mutation's own copy) runs where it is told
            workdir=(self.provider.workdir or "") if cwd is None else "",
        )

    async def execute(
        self,
        argv: Sequence[str],
        *,
        cwd: Path,
        env: Mapping[str, str],
        timeout_ms: int,
        log_name: str,
    ) -> JobResult:
        """Run one command of this provider through the executor, as a Job."""
        repo = self.provider.repository or next(iter(self.workdirs), "")
        job = self.job(argv, repo=repo, env=env, log_name=log_name, cwd=cwd)
        return await self.executor.run(replace(job, timeout_ms=timeout_ms))

    def claim_scope(self) -> ClaimScope:
        """The plan's claims as this provider's ``read`` sees them (data, no plan)."""
        claims = self.plan.evidence.claims.values()
        capabilities = sorted({cap for claim in claims for cap in claim.requires})
        return ClaimScope(
            requiring={cap: self.claims_requiring(cap) for cap in capabilities},
            known=tuple(sorted(self.plan.evidence.claims)),
            os_input=tuple(sorted(c.id for c in claims if c.input_mode in ("os-input", "both"))),
        )

    def claims_requiring(self, capability: str) -> tuple[str, ...]:
        """Claims that need ``capability`` and may be credited from this repository."""
        repo = self.provider.repository
        out = []
        for claim in self.plan.evidence.claims.values():
            if capability not in claim.requires:
                continue
            if claim.repository is not None and repo is not None and claim.repository != repo:
                continue
            out.append(claim.id)
        return tuple(sorted(out))


class Adapter(Protocol):
    """What each module under ``changeloop/providers/`` exposes.

    An adapter that runs one command says how (``prepare`` → a :class:`Job`, or
    the outcomes already when it refuses before running) and how to read what
    came of it (``read``, pure); the engine hands the job to the executor in
    between. An adapter that runs no command, or several (external,
    contract-digest, mutation), does its work in ``run`` instead; the others set
    ``run = None``.
    """

    NAME: str
    DEFAULT_CAPABILITY: str
    RUNS_COMMAND: bool  # False for adapters that execute nothing (contract-digest, external)

    @property
    def run(self) -> Callable[[RunContext], Awaitable[list[Outcome]]] | None:
        """The adapter's own work (external, contract-digest, mutation); None: prepare/read."""
        ...

    def default_resources(self, provider: Provider, plan: Plan) -> tuple[str, ...]: ...

    def repositories(self, provider: Provider, plan: Plan) -> tuple[str, ...]:
        """Repositories whose content this provider's result depends on (its subjects)."""
        ...

    def capabilities(self, provider: Provider) -> tuple[str, ...]:
        """Capabilities of the receipts it issues, in order."""
        ...

    def effective_command(self, provider: Provider) -> tuple[str, ...] | None: ...

    def fingerprint_inputs(self, provider: Provider) -> Mapping[str, Any]:
        """Adapter-specific wiring the result depends on (JSON-able)."""
        ...

    def preflight(self, provider: Provider, plan: Plan) -> Sequence[Problem]: ...

    def prepare(self, ctx: RunContext) -> Job | list[Outcome]: ...

    def read(self, job: Job, result: JobResult) -> list[Outcome]: ...

    def missing_reason(self, ctx: RunContext) -> str | None:
        """Why it issued no receipt (only an adapter reading evidence made elsewhere may)."""
        ...


def runs_itself(ctx: RunContext) -> Job | list[Outcome]:
    """``prepare`` of an adapter that does its work in ``run``: never called."""
    raise NotImplementedError(f"adapter {ctx.provider.adapter} runs itself")


def reads_nothing(job: Job, result: JobResult) -> list[Outcome]:
    """``read`` of an adapter that does its work in ``run``: never called."""
    raise NotImplementedError(f"adapter {job.provider.adapter} runs itself")


def missing_command(provider: Provider, example: str) -> list[Problem]:
    """The preflight problem of an adapter that runs a command but was given none."""
    if provider.command:
        return []
    return [
        Problem(
            code="missing_command",
            message=f"provider '{provider.name}' (adapter {provider.adapter}) has no command",
            location=provider.location,
            fix=f"add `command: {example}`",
            providers=(provider.name,),
        )
    ]


# -- defaults every adapter shares ---------------------------------------------
def own_repository(provider: Provider, plan: Plan) -> tuple[str, ...]:  # noqa: ARG001 (the Adapter signature)
    """The shared ``repositories`` rule: a provider's result depends on its own repository."""
    return (provider.repository,) if provider.repository else ()


def read_own_workspace(provider: Provider, plan: Plan) -> tuple[str, ...]:  # noqa: ARG001 (the Adapter signature)
    """The shared ``default_resources`` rule: a shared read of its own repository."""
    return (f"workspace-read:{provider.repository}",)


def escape_reason(path: str) -> str | None:
    """Why ``path`` leaves its repository on paper (absolute, or climbing with ``..``), or None.

    The one path-escape check (docs/ARCHITECTURE.md): preflight, every adapter and the
    contract digest ask it, on POSIX and Windows spellings alike.
    """
    posix, windows = PurePosixPath(path), PureWindowsPath(path)
    if posix.is_absolute() or windows.is_absolute() or windows.drive or path.startswith("\\"):
        return "is absolute"
    if ".." in posix.parts or ".." in windows.parts:
        return "climbs out with '..'"
    return None


def escapes(path: str) -> bool:
    return escape_reason(path) is not None


def inside(root: Path, rel: str) -> Path | None:
    """``root / rel``, or None when it resolves outside ``root`` (the one symlink-escape check)."""
    path = root / rel
    try:
        path.resolve().relative_to(root.resolve())
    except (ValueError, OSError, RuntimeError):
        return None
    return path

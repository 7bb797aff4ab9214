"""The ``mutation`` adapter: how much do a claim's citing tests check? (docs/grounding.md)

Example execution.yaml::

    repositories:
      self:
        entryPoints: ["shop/api.py::create_*"]
    providers:
      mutation:
        adapter: mutation
        command: [python3, -m, pytest, -q]   # how the project runs its tests
        claims: [order-total]                # the claims to score
        threshold: 0.8                       # optional: a gate (0–1)
        maxMutants: 50                       # optional: deterministic sample

Run, always in a copy sandbox of its own under the provider's run directory
(``run`` does the I/O; :mod:`changeloop.mutation.judge` decides, from the
results alone):

1. A traced run of ``command`` with changeloop's plugin: which tests cite each
   claim, and which production functions they ran under entry points (kept as
   the last traced run's record, which ``prove --dry-run`` counts from).
2. In-house AST mutants (``changeloop.mutation.mutants``, chosen by
   ``changeloop.mutation.select``) of those functions;
   with ``maxMutants``, a sample seeded by the provider's wiring and content.
3. Each mutant runs against every test citing the claim: a failing run kills
   it (a timeout too); exit 0 means it survived; any other exit (collection or
   import error, no tests) means the mutant does not import: skipped, not scored.

Receipt: ``mutation: {claim: {total, killed}}`` — a score, never a word.
``total: 0`` is ``inconclusive``. Without ``threshold`` the receipt passes and
informs; with it, a claim scoring below fails the receipt.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from changeloop.errors import Problem
from changeloop.fingerprints.wiring import wiring_digest
from changeloop.grounding import citations as grounding
from changeloop.model import ADAPTER_CAPABILITIES, Plan, Provider
from changeloop.mutation.judge import (
    ADAPTER,
    ClaimRuns,
    Fate,
    MutantRun,
    baseline_failure,
    fate,
    judge,
    outcome,
)
from changeloop.mutation.mutants import Mutant
from changeloop.mutation.sandbox import make_copy, mutated
from changeloop.mutation.select import (
    claim_mutants,
    compiles,
    plan_for_claim,
    reached,
    reaching_tests,
)
from changeloop.outcome import Outcome
from changeloop.project.packages import project_packages
from changeloop.providers.base import (
    RunContext,
    missing_command,
    own_repository,
    reads_nothing,
    runs_itself,
)
from changeloop.providers.pytest_injection import inject, inject_mutation

MUTANTS_ENV = "CHANGELOOP_MUTANTS"  # the same name as in pytest_mutate.py

NAME = ADAPTER  # judge stamps the same name on the receipt's observer
DEFAULT_CAPABILITY = ADAPTER_CAPABILITIES[NAME]
prepare, read = runs_itself, reads_nothing  # the work is in run()
RUNS_COMMAND = True
MIN_MUTANT_TIMEOUT_MS = 10_000


def default_resources(provider: Provider, plan: Plan) -> tuple[str, ...]:
    return (f"workspace-write:{provider.repository}",)


repositories = own_repository


def capabilities(provider: Provider) -> tuple[str, ...]:
    return (provider.capability,)


def effective_command(provider: Provider) -> tuple[str, ...] | None:
    return provider.command


def fingerprint_inputs(provider: Provider) -> Mapping[str, Any]:
    return {
        "threshold": provider.threshold,
        "maxMutants": provider.max_mutants,
        "entryPoints": sorted(provider.entry_points),
    }


def preflight(provider: Provider, plan: Plan) -> Sequence[Problem]:
    problems = missing_command(provider, "[python, -m, pytest, -q]")
    if not provider.claims:
        problems.append(
            Problem(
                code="mutation_without_claims",
                message=f"provider '{provider.name}' (adapter mutation) names no claims to score",
                location=provider.location,
                fix="add `claims: [<claim id>, …]`: the claims whose citing tests are mutated",
                providers=(provider.name,),
            )
        )
    if provider.repository is not None and not provider.entry_points:
        problems.append(
            Problem(
                code="mutation_without_entry_points",
                message=f"provider '{provider.name}' (adapter mutation): repository "
                f"'{provider.repository}' declares no entryPoints, so no function is mutated",
                location=provider.location,
                fix=f"declare repositories.{provider.repository}.entryPoints in execution.yaml, "
                'e.g. ["pkg/api.py::create_*"]',
                providers=(provider.name,),
            )
        )
    return problems


# -- what to mutate ---------------------------------------------------------------------------


def _seed(ctx: RunContext) -> str:
    """Deterministic per provider wiring and content (the fingerprint's stable parts)."""
    trees = sorted(f"{repo}={ident.tree}" for repo, ident in ctx.identities.items())
    text = "\n".join([wiring_digest(ctx.plan, ctx.provider), *trees])
    return hashlib.sha256(text.encode()).hexdigest()


def dry_run_counts(plan: Plan, provider: Provider) -> dict[str, int | None]:
    """Mutants per claim from the last traced run (None: unknown until one exists)."""
    repo = plan.repositories.get(provider.repository or "")
    traced = (
        grounding.last_record(plan.root, plan.change.id, repo.name) if repo is not None else None
    )
    out: dict[str, int | None] = {}
    for claim in provider.claims:
        if traced is None or repo is None:
            out[claim] = None
            continue
        _, functions = plan_for_claim(traced, claim)
        total = len(claim_mutants(repo.path, functions, None, ""))
        out[claim] = min(total, provider.max_mutants) if provider.max_mutants else total
    return out


# -- the run: I/O only; the judgement is changeloop.mutation.judge ------------------------------


@dataclass(frozen=True)
class Planned:
    """One mutant of one claim, with the citing tests that reach its function."""

    id: str
    mutant: Mutant
    tests: tuple[str, ...]
    reached: bool | None


async def run(ctx: RunContext) -> list[Outcome]:
    """Trace, then run each claim's mutants against the tests that reach them; ``judge`` decides."""
    provider = ctx.provider
    repo = provider.repository or next(iter(ctx.workdirs))
    argv = tuple(provider.command or ())
    copy = make_copy(ctx.workdirs[repo], ctx.run_dir / "sandbox")
    env = {**ctx.env, "PYTHONDONTWRITEBYTECODE": "1"}  # a stale .pyc must not hide a mutant
    traced_dir = ctx.run_dir / "traced"
    injected = inject(argv, env, traced_dir, project_packages(copy))
    if injected.imports_dir is None:
        return outcome(
            provider, "fail", f"command {list(argv)} does not run pytest: mutation needs pytest"
        )
    traced_env = grounding.configure(
        traced_dir, repo, copy, provider.entry_points, injected.env, lines=True
    )
    base = await ctx.execute(
        injected.argv,
        cwd=copy,
        env=traced_env,
        timeout_ms=provider.timeout_ms,
        log_name=f"{provider.name}-traced",
    )
    failed = baseline_failure(provider, base)
    if failed is not None:
        return failed
    traced = grounding.read_records(traced_dir)
    grounding.remember(ctx.plan.root, ctx.plan.change.id, repo, traced)
    seed = _seed(ctx)
    timeout = min(provider.timeout_ms, max(MIN_MUTANT_TIMEOUT_MS, base.duration_ms * 10))
    plans: list[tuple[str, tuple[str, ...], list[Planned]]] = []
    for n, claim in enumerate(provider.claims):
        tests, functions = plan_for_claim(traced, claim)
        mutants = claim_mutants(copy, functions, provider.max_mutants, seed) if tests else []
        planned = []
        for i, mutant in enumerate(mutants):
            reaching = reaching_tests(traced, tests, mutant)
            hit = reached(traced, reaching, mutant)
            planned.append(Planned(f"c{n}m{i}", mutant, tuple(reaching), hit))
        plans.append((claim, tuple(tests), planned))
    every = [p for _, _, planned in plans for p in planned]
    where = _Where(ctx, copy, argv, env, timeout)
    fates = await _session(where, every)
    for item in every:
        if item.id not in fates:
            fates[item.id] = await _alone(where, item)
    claims = [
        ClaimRuns(
            claim,
            tests,
            tuple(
                MutantRun(p.mutant, fates[p.id][0], p.tests, p.reached, fates[p.id][1])
                for p in planned
            ),
        )
        for claim, tests, planned in plans
    ]
    return judge(provider, claims)


@dataclass(frozen=True)
class _Where:
    """Where and how the mutants run: the provider's copy, its command, env and timeout."""

    ctx: RunContext
    copy: Path
    argv: tuple[str, ...]
    env: Mapping[str, str]
    timeout: int


async def _session(where: _Where, planned: list[Planned]) -> dict[str, tuple[Fate, str | None]]:
    """Every swappable mutant in one pytest process that forks per mutant (pytest_mutate.py).

    Mutants it could not run (their function is not loaded, is nested, the process
    failed) are missing from the answer: the caller runs them one pytest each.
    """
    out: dict[str, tuple[Fate, str | None]] = {}
    runnable = []
    for item in planned:
        if not item.tests or not compiles(item.mutant):
            out[item.id] = ("skipped", "does not compile" if item.tests else "no test reaches it")
        else:
            runnable.append(item)
    if not runnable or not hasattr(os, "fork"):
        return out
    ctx, copy = where.ctx, where.copy
    folder = ctx.run_dir / "mutants"
    results = folder / "results"
    injected = inject_mutation(where.argv, where.env, folder, project_packages(copy))
    if injected.imports_dir is None:
        return out
    doc = {
        "results": str(results),
        "jobs": max(1, os.cpu_count() or 1),
        "timeoutMs": where.timeout,
        "mutants": [
            {
                "id": item.id,
                "file": str(copy / item.mutant.file),
                "qualname": item.mutant.qualname,
                "source": item.mutant.source,
                "tests": list(item.tests),
            }
            for item in runnable
        ],
    }
    config = folder / "mutants.json"
    try:
        config.write_text(json.dumps(doc), encoding="utf-8")
    except OSError:
        return out
    tests = sorted({t for item in runnable for t in item.tests})
    await ctx.execute(
        (*injected.argv, "-p", "no:cacheprovider", *tests),
        cwd=copy,
        env={**injected.env, MUTANTS_ENV: str(config)},
        timeout_ms=ctx.provider.timeout_ms,
        log_name=f"{ctx.provider.name}-mutants",
    )
    for item in runnable:
        try:
            found = json.loads((results / f"{item.id}.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue  # the session did not get to it: run it alone
        said = found.get("fate") if isinstance(found, dict) else None
        why = (found.get("test") or found.get("why")) if isinstance(found, dict) else None
        if said in ("killed", "survived"):
            out[item.id] = (said, str(why) if why else None)
        elif said == "unimportable":  # its module's body fails: it does not import
            out[item.id] = ("skipped", f"does not import: {why}")
    return out


async def _alone(where: _Where, item: Planned) -> tuple[Fate, str | None]:
    """One mutant in a pytest of its own: the mutated module written into the copy."""
    with mutated(where.copy / item.mutant.file, item.mutant.source):
        result = await where.ctx.execute(
            (*where.argv, "-x", "-p", "no:cacheprovider", *item.tests),
            cwd=where.copy,
            env=where.env,
            timeout_ms=where.timeout,
            log_name=f"{where.ctx.provider.name}-mutant-{item.id}",
        )
    return fate(result), None


def missing_reason(ctx: RunContext) -> str | None:
    """Never asked: this adapter issues a receipt for every capability it runs."""
    return None

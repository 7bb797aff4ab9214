"""The ``mutation`` adapter: how much do a claim's citing tests check? (DESIGN.md §11)

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

Run, always in a copy sandbox of its own under the provider's run directory:

1. A traced run of ``command`` with changeloop's plugin: which tests cite each
   claim, and which production functions they ran under entry points (kept as
   the last traced run's record, which ``prove --dry-run`` counts from).
2. In-house AST mutants (``changeloop.mutation.mutants``) of those functions;
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
import random
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from changeloop.detect.packages import project_packages
from changeloop.errors import Problem
from changeloop.grounding import citations as grounding
from changeloop.model import ClaimMark, Plan, Provider, Status
from changeloop.mutation.mutants import Mutant, mutants_of
from changeloop.mutation.sandbox import make_copy, mutated
from changeloop.providers.base import Finding, Observer, Outcome, RunContext, missing_command
from changeloop.providers.pytest_injection import inject

NAME = "mutation"
DEFAULT_CAPABILITY = "mutation"
RUNS_COMMAND = True
MIN_MUTANT_TIMEOUT_MS = 10_000
MAX_SURVIVORS_SHOWN = 20


def default_resources(provider: Provider, plan: Plan) -> tuple[str, ...]:
    return (f"workspace-write:{provider.repository}",)


def repositories(provider: Provider, plan: Plan) -> tuple[str, ...]:
    return (provider.repository,) if provider.repository else ()


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


def plan_for_claim(
    traced: Mapping[str, Mapping[str, Any]], claim: str
) -> tuple[list[str], dict[str, set[str]]]:
    """(every test citing ``claim``, file -> qualnames its citing tests ran under entry points)."""
    tests: list[str] = []
    functions: dict[str, set[str]] = {}
    for nodeid, record in sorted(traced.items()):
        cited = record.get("claims")
        if not isinstance(cited, Mapping | list) or claim not in cited:
            continue
        tests.append(nodeid)
        for entry in record.get("functions") or ():
            if isinstance(entry, list | tuple) and len(entry) >= 2:
                functions.setdefault(str(entry[0]), set()).add(str(entry[1]))
    return tests, functions


def claim_mutants(
    root: Path, functions: Mapping[str, set[str]], limit: int | None, seed: str
) -> list[Mutant]:
    """The mutants of one claim's functions under ``root`` (sampled to ``limit``)."""
    found: list[Mutant] = []
    for file in sorted(functions):
        path = root / file
        try:
            source = path.read_text(encoding="utf-8")
            found.extend(mutants_of(source, file, functions[file]))
        except (OSError, UnicodeDecodeError, SyntaxError, ValueError, RecursionError):
            continue
    if limit is not None and len(found) > limit:
        chosen = random.Random(seed).sample(range(len(found)), limit)  # noqa: S311 — a sample
        found = [found[i] for i in sorted(chosen)]
    return found


def _seed(ctx: RunContext) -> str:
    """Deterministic per provider wiring and content (the fingerprint's stable parts)."""
    from changeloop.wiring import wiring_digest

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


# -- the run ------------------------------------------------------------------------------------


def _outcome(ctx: RunContext, status: Status, reason: str | None, **extra: Any) -> list[Outcome]:
    marks: dict[str, ClaimMark] = dict.fromkeys(ctx.provider.claims, "uncredited")
    marks.update(extra.pop("claims", {}))
    return [
        Outcome(
            capability=ctx.provider.capability,
            status=status,
            reason=reason,
            claims=marks,
            observer=Observer(adapter=NAME, tool="pytest"),
            command=ctx.provider.command,
            **extra,
        )
    ]


async def run(ctx: RunContext) -> list[Outcome]:
    provider = ctx.provider
    repo = provider.repository or next(iter(ctx.workdirs))
    argv = tuple(provider.command or ())
    copy = make_copy(ctx.workdirs[repo], ctx.run_dir / "sandbox")
    env = {**ctx.env, "PYTHONDONTWRITEBYTECODE": "1"}  # a stale .pyc must not hide a mutant
    traced_dir = ctx.run_dir / "traced"
    injected = inject(argv, env, traced_dir, project_packages(copy))
    if injected.imports_dir is None:
        return _outcome(
            ctx, "fail", f"command {list(argv)} does not run pytest: mutation needs pytest"
        )
    traced_env = grounding.configure(traced_dir, repo, copy, provider.entry_points, injected.env)
    base = await ctx.execute(
        injected.argv,
        cwd=copy,
        env=traced_env,
        timeout_ms=provider.timeout_ms,
        log_name=f"{provider.name}-traced",
    )
    if base.spawn_error is not None or base.timed_out or base.exit_code != 0:
        why = base.spawn_error or ("timed out" if base.timed_out else f"exited {base.exit_code}")
        return _outcome(
            ctx, "fail", f"the tests fail before any mutation ({why})", exit_code=base.exit_code
        )
    traced = grounding.read_records(traced_dir)
    grounding.remember(ctx.plan.root, ctx.plan.change.id, repo, traced)
    seed = _seed(ctx)
    timeout = min(provider.timeout_ms, max(MIN_MUTANT_TIMEOUT_MS, base.duration_ms * 10))
    scores: dict[str, dict[str, int]] = {}
    findings: list[Finding] = []
    survivors: dict[str, list[str]] = {}
    skipped: dict[str, int] = {}
    for claim in provider.claims:
        tests, functions = plan_for_claim(traced, claim)
        mutants = claim_mutants(copy, functions, provider.max_mutants, seed) if tests else []
        total = killed = dropped = 0
        for index, mutant in enumerate(mutants):
            verdict = await _try(
                ctx,
                copy,
                argv=argv,
                env=env,
                tests=tests,
                mutant=mutant,
                timeout_ms=timeout,
                label=f"{claim}-{index}",
            )
            if verdict == "skipped":
                dropped += 1
                continue
            total += 1
            if verdict == "killed":
                killed += 1
            else:
                survivors.setdefault(claim, []).append(f"{mutant.file}::{mutant.description}")
        scores[claim] = {"total": total, "killed": killed}
        skipped[claim] = dropped
        findings.append(_score_finding(claim, total, killed, dropped, len(tests)))
    return _judge(ctx, scores, findings, survivors, skipped)


async def _try(
    ctx: RunContext,
    copy: Path,
    *,
    argv: tuple[str, ...],
    env: Mapping[str, str],
    tests: list[str],
    mutant: Mutant,
    timeout_ms: int,
    label: str,
) -> str:
    """``killed`` | ``survived`` | ``skipped`` (the mutant does not import)."""
    try:
        compile(mutant.source, mutant.file, "exec")
    except (SyntaxError, ValueError):
        return "skipped"
    with mutated(copy / mutant.file, mutant.source):
        result = await ctx.execute(
            (*argv, "-x", "-p", "no:cacheprovider", *tests),
            cwd=copy,
            env=env,
            timeout_ms=timeout_ms,
            log_name=f"{ctx.provider.name}-mutant-{label}",
        )
    if result.timed_out or result.exit_code == 1:
        return "killed"
    if result.exit_code == 0:
        return "survived"
    return "skipped"  # 2: interrupted (import/collection error), 4: usage, 5: no tests


def _score_finding(claim: str, total: int, killed: int, dropped: int, tests: int) -> Finding:
    skipped = f"; {dropped} mutant(s) did not import (skipped)" if dropped else ""
    if total == 0:
        message = (
            f"claim {claim}: no mutant could be scored ({tests} citing test(s); their traced run "
            f"ran no production function under an entry point{skipped})"
        )
        return Finding(kind="mutation-score", message=message, severity="warning")
    message = f"claim {claim}: {killed} of {total} mutant(s) killed by {tests} citing test(s)"
    return Finding(kind="mutation-score", message=message + skipped, severity="info")


def _judge(
    ctx: RunContext,
    scores: dict[str, dict[str, int]],
    findings: list[Finding],
    survivors: dict[str, list[str]],
    skipped: dict[str, int],
) -> list[Outcome]:
    threshold = ctx.provider.threshold
    empty = [c for c, s in scores.items() if s["total"] == 0]
    below = [
        c
        for c, s in scores.items()
        if threshold is not None and s["total"] and s["killed"] / s["total"] < threshold
    ]
    marks: dict[str, ClaimMark] = {}
    status: Status
    reason: str | None
    if below:
        status = "fail"
        reason = ", ".join(
            f"claim {c} killed {scores[c]['killed']} of {scores[c]['total']} mutants" for c in below
        )
        reason += f", below threshold {threshold}"
        marks = dict.fromkeys(below, "failed")
    elif empty:
        status = "inconclusive"
        reason = f"no mutant was scored for claim(s) {', '.join(empty)} (total: 0)"
    else:
        status, reason = "pass", None
    if status != "fail":
        marks = {c: "credited" for c, s in scores.items() if s["total"] and status == "pass"}
    details = {
        "threshold": threshold,
        "survivors": {c: names[:MAX_SURVIVORS_SHOWN] for c, names in survivors.items()},
        "skipped": skipped,
    }
    return _outcome(
        ctx, status, reason, claims=marks, mutation=scores, findings=tuple(findings),
        details=details, exit_code=0,
    )  # fmt: skip


def missing_reason(ctx: RunContext) -> str | None:
    """Never asked: this adapter issues a receipt for every capability it runs."""
    return None

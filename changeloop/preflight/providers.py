"""Preflight of one provider: its adapter, repository, references, env and paths."""

from __future__ import annotations

from collections.abc import Iterable

from changeloop.errors import Location, Problem
from changeloop.model import Plan, Provider
from changeloop.plan import MULTI_REPOSITORY_ADAPTERS
from changeloop.preflight.env import c_strings, secrets
from changeloop.preflight.locate import Locator
from changeloop.providers import registry
from changeloop.providers.base import escapes


def provider_problems(plan: Plan, p: Provider, at: Locator) -> Iterable[Problem]:
    """Everything wrong with ``p`` on its own (cross-provider checks are ``links.py``)."""
    me = (p.name,)
    label = f"provider {p.name!r}"
    adapter = registry.get(p.adapter)
    if adapter is None:
        yield Problem(
            "unknown_adapter",
            f"{label} uses unknown adapter {p.adapter!r} "
            f"(known: {', '.join(sorted(registry.ADAPTERS))})",
            at.provider(p, "adapter"),
            fix="use one of the known adapters",
            providers=me,
        )
    if p.adapter == "contract-digest":
        yield from _contract(plan, p, at)
    elif p.repository is None and p.adapter not in MULTI_REPOSITORY_ADAPTERS:
        yield Problem(
            "provider_without_repository",
            f"{label} names no repository and there "
            f"are several ({', '.join(sorted(plan.repositories))})",
            at.provider(p),
            fix="add `repository: <name>` to the provider",
            providers=me,
        )
    if p.repository is not None and p.repository not in plan.repositories:
        yield Problem(
            "unknown_repository",
            f"{label} names unknown repository "
            f"{p.repository!r} (repositories: {', '.join(sorted(plan.repositories))})",
            at.provider(p, "repository"),
            fix="use a repository evidence.yaml declares",
            providers=me,
        )
    if p.accepts and p.adapter != "external":
        yield Problem(
            "accepts_not_external",
            f"{label} (adapter {p.adapter}) has `accepts`, which only an external provider reads",
            at.provider(p, "accepts"),
            fix="move `accepts` to the external provider that takes these receipts",
            providers=me,
        )
    references = (  # key, names used, names that exist, code, verb, noun, fix
        (
            "dependsOn",
            p.depends_on,
            plan.providers,
            "unknown_dependency",
            "depends on",
            "provider",
            "name an existing provider in dependsOn",
        ),
        (
            "services",
            p.services,
            plan.services,
            "unknown_service",
            "uses",
            "service",
            "declare it under services: in execution.yaml",
        ),
        (
            "claims",
            p.claims,
            plan.evidence.claims,
            "unknown_claim",
            "credits",
            "claim",
            "name a claim of evidence.yaml",
        ),
    )
    for key, used, known, code, verb, noun, fix in references:
        for i, name in enumerate(used):
            if name not in known:
                listed = ", ".join(sorted(known)) or "none"
                yield Problem(
                    code,
                    f"{label} {verb} unknown {noun} {name!r} ({noun}s: {listed})",
                    at.provider(p, key, i),
                    fix=fix,
                    providers=me,
                )
    yield from secrets(dict(p.env), label, lambda *k: at.provider(p, *k), me)
    yield from c_strings(p.command, dict(p.env), label, lambda *k: at.provider(p, *k), me)
    for key, value in (("report", p.report), ("receipts", p.receipts), ("workdir", p.workdir)):
        if value is not None and escapes(value):
            yield _escape(label, key, value, at.provider(p, key), me)
    yield from _workdir(plan, p, at)
    for i, glob in enumerate(p.inputs):
        if escapes(glob):
            yield _escape(label, "inputs", glob, at.provider(p, "inputs", i), me)


def _workdir(plan: Plan, p: Provider, at: Locator) -> Iterable[Problem]:
    """``workdir`` names a folder of the repository (a workspace member) the command runs in."""
    repo = plan.repositories.get(p.repository or "")
    if repo is None and len(plan.repositories) == 1:
        repo = next(iter(plan.repositories.values()))
    if p.workdir is None or repo is None or escapes(p.workdir):
        return
    if not (repo.path / p.workdir).is_dir():
        yield Problem(
            "workdir_missing",
            f"provider {p.name!r}: workdir {p.workdir!r} is not a folder of repository "
            f"{repo.name!r}",
            at.provider(p, "workdir"),
            fix="name the folder (relative to the repository) the command runs in, e.g. "
            "packages/core",
            providers=(p.name,),
        )


def _escape(
    label: str, key: str, value: str, where: Location | None, providers: tuple[str, ...]
) -> Problem:
    return Problem(
        "path_escape",
        f"{label}: {key} {value!r} leaves its repository (absolute or '..')",
        where,
        fix="use a path relative to the repository, without '..'",
        providers=providers,
    )


def _contract(plan: Plan, p: Provider, at: Locator) -> Iterable[Problem]:
    label, me = f"provider {p.name!r}", (p.name,)
    if "repository" in p.keys:
        yield Problem(
            "contract_digest_repository",
            f"{label} (contract-digest) compares repositories and takes no single `repository`",
            at.provider(p, "repository", key=True),
            fix="remove `repository`; list each repository under contract",
            providers=me,
        )
    if len(p.contract) < 2:
        yield Problem(
            "contract_needs_two",
            f"{label} (contract-digest) names "
            f"{len(p.contract)} repositor{'y' if len(p.contract) == 1 else 'ies'} in "
            "contract; it needs two or more to compare",
            at.provider(p, "contract") if "contract" in p.keys else at.provider(p),
            fix="add `contract: {<repo>: <path>, <other-repo>: <path>}`",
            providers=me,
        )
    for repo, path in p.contract.items():
        if repo not in plan.repositories:
            yield Problem(
                "contract_unknown_repository",
                f"{label} contract names unknown "
                "repository "
                f"{repo!r} (repositories: {', '.join(sorted(plan.repositories))})",
                at.provider(p, "contract", repo, key=True),
                fix="use a repository evidence.yaml declares",
                providers=me,
            )
        if escapes(path):
            yield _escape(label, f"contract.{repo}", path, at.provider(p, "contract", repo), me)

"""Merge evidence, execution and derived wiring into one typed :class:`Plan`.

The plan is everything ``prove`` needs to know before running, with every
default applied, so preflight, fingerprints and the engine all read the same
resolved values::

    plan = build_plan(root, find_change(root, "add-greeting"), derived=derived)
    plan.providers["test"].resources   # ("workspace-read:self",)

Configured providers replace derived ones of the same name entirely
 (docs/execution-yaml.md); configured ones come first, in file order.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from changeloop.config.evidence import load_evidence
from changeloop.config.execution import load_execution
from changeloop.config.schema import position
from changeloop.errors import ConfigError, Location, Problem
from changeloop.model import (
    AdapterFacts,
    Evidence,
    Execution,
    Plan,
    Provider,
    Repository,
    Service,
    default_capability,
)
from changeloop.workspace.changeref import ChangeRef

EVIDENCE_FILE = "evidence.yaml"
EXECUTION_FILE = "execution.yaml"
# Adapters whose provider spans repositories rather than belonging to one.
MULTI_REPOSITORY_ADAPTERS = frozenset({"contract-digest", "external"})


def display_path(root: Path, path: Path) -> str:
    """Paths in messages and JSON are relative to the workspace root (docs/design.md)."""
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except (ValueError, OSError, RuntimeError):  # RuntimeError: a symlink loop (Python < 3.13)
        try:
            return path.relative_to(root).as_posix()
        except ValueError:
            return str(path)


def load_change_config(root: Path, change: ChangeRef) -> tuple[Evidence, Execution | None]:
    """Both files of a change; problems of both are reported together."""
    evidence_path = change.path / EVIDENCE_FILE
    execution_path = change.path / EXECUTION_FILE
    shown = display_path(root, evidence_path)
    if not os.path.lexists(evidence_path):  # anything else there is read and refused
        raise ConfigError(
            Problem(
                code="evidence_missing",
                message=f"change {change.id!r} has no {EVIDENCE_FILE} ({shown})",
                location=Location(shown),
                # `evidence init` cannot write it: it reads it (it writes execution.yaml)
                fix=f"create {shown} with `version: 3` and the claims to prove, e.g.:\n"
                "      version: 3\n"
                "      claims:\n"
                '        my-claim: {statement: "what must be true", requires: [test]}',
            )
        )
    problems: list[Problem] = []
    evidence: Evidence | None = None
    execution: Execution | None = None
    try:
        evidence = load_evidence(evidence_path, shown)
    except ConfigError as exc:
        problems += exc.problems
    if os.path.lexists(execution_path):
        try:
            execution = load_execution(execution_path, display_path(root, execution_path))
        except ConfigError as exc:
            problems += exc.problems
    if problems or evidence is None:
        raise ConfigError(sorted(problems, key=position))
    return evidence, execution


def _merge(
    configured: Mapping[str, Provider], derived: Mapping[str, Provider] | None
) -> dict[str, Provider]:
    merged = dict(configured)
    for name, provider in (derived or {}).items():
        merged.setdefault(name, provider)
    return merged


def _only(repositories: Mapping[str, Repository]) -> str | None:
    return next(iter(repositories)) if len(repositories) == 1 else None


def _resolve(provider: Provider, repositories: Mapping[str, Repository]) -> Provider:
    """Repository and capability defaults that need no adapter call."""
    changes: dict[str, Any] = {}
    if provider.repository is None and provider.adapter != "contract-digest":
        only = _only(repositories)
        if only is not None:
            changes["repository"] = only
    if not provider.capability:
        changes["capability"] = default_capability(provider.name, provider.adapter)
    return replace(provider, **changes) if changes else provider


# Adapters whose result depends on the repository's entry points (docs/grounding.md).
GROUNDED_ADAPTERS = frozenset({"test-discovery", "mutation"})


def _with_entry_points(provider: Provider, repositories: Mapping[str, Repository]) -> Provider:
    """Copy the repository's entryPoints onto providers that trace against them."""
    repo = repositories.get(provider.repository or "")
    if provider.adapter not in GROUNDED_ADAPTERS or repo is None or not repo.entry_points:
        return provider
    return replace(provider, entry_points=repo.entry_points)


def _with_resources(provider: Provider, plan: Plan) -> Provider:
    """Declared resources replace the defaults; a service's port is shared by its users."""
    ports = tuple(
        f"service-port:{service.readiness.port}"
        for name in provider.services
        if (service := plan.services.get(name)) is not None
        and service.readiness is not None
        and service.readiness.port is not None
    )
    resources = provider.resources if provider.resources_declared else _defaults(provider, plan)
    if resources is None:
        return provider
    extra = tuple(p for p in ports if p not in resources)
    return replace(provider, resources=tuple(resources) + extra)


def _defaults(provider: Provider, plan: Plan) -> tuple[str, ...] | None:
    from changeloop.providers import registry  # noqa: PLC0415 - the registry pulls in every adapter and anyio; only settling providers needs it

    adapter = registry.get(provider.adapter)
    if adapter is None:
        return None  # unknown adapter: preflight names it
    if provider.repository is None and provider.adapter not in MULTI_REPOSITORY_ADAPTERS:
        return None  # preflight refuses a provider without a repository
    return tuple(adapter.default_resources(provider, plan))


def build_plan(
    root: Path,
    change: ChangeRef,
    derived: Mapping[str, Provider] | None = None,
    config: tuple[Evidence, Execution | None] | None = None,
) -> Plan:
    """The resolved plan of one change; ConfigError when its files cannot be read.

    ``config`` passes files already loaded (by ``load_change_config``) so one
    command parses each file once.
    """
    evidence, execution = config or load_change_config(root, change)
    setup = execution.setup if execution else {}
    entry_points = execution.entry_points if execution else {}
    repositories = {
        name: Repository(
            name=name,
            path=(root / rel).resolve(),
            relpath=rel,
            setup=setup.get(name, ()),
            entry_points=entry_points.get(name, ()),
        )
        for name, rel in evidence.repositories.items()
    }
    configured = execution.providers if execution else {}
    providers = {
        name: _with_entry_points(_resolve(p, repositories), repositories)
        for name, p in _merge(configured, derived).items()
    }
    services: dict[str, Service] = {}
    only = _only(repositories)
    for name, service in (execution.services if execution else {}).items():
        adopt = service.repository is None and only is not None
        services[name] = replace(service, repository=only) if adopt else service
    draft = Plan(
        root=root,
        change=change,
        evidence=evidence,
        execution=execution,
        repositories=repositories,
        providers=providers,
        services=services,
    )
    final = {name: _with_resources(p, draft) for name, p in providers.items()}
    return settle(replace(draft, providers=final))


def settle(plan: Plan) -> Plan:
    """Every provider with its adapter facts, asked of its adapter once, here.

    After this the run never asks the adapter registry what a provider's
    repositories, capabilities or effective command are: they travel with it.
    """
    from changeloop.providers import registry  # noqa: PLC0415 - the registry pulls in every adapter and anyio; only settling providers needs it

    settled: dict[str, Provider] = {}
    for name, provider in plan.providers.items():
        adapter = registry.get(provider.adapter)
        if adapter is None:  # unknown adapter: preflight names it
            settled[name] = provider
            continue
        facts = AdapterFacts(
            repositories=tuple(adapter.repositories(provider, plan)),
            capabilities=tuple(adapter.capabilities(provider)),
            command=adapter.effective_command(provider),
            inputs=dict(adapter.fingerprint_inputs(provider)),
            runs_command=adapter.RUNS_COMMAND,
        )
        settled[name] = replace(provider, facts=facts)
    return replace(plan, providers=settled)

"""Refuse a plan before anything runs (DESIGN.md §4), reporting every problem at once.

A user fixing wiring wants the whole list, not one error per attempt, so
:func:`check` collects everything (sorted by file position) and :func:`enforce`
raises it as one :class:`PreflightError` (exit 2)::

    enforce(build_plan(root, change))   # or: for p in check(plan): print(p.render())

Every Problem names the providers involved, points at the offending line of
execution.yaml / evidence.yaml where the plan came from a file, and says the fix.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from pathlib import PurePosixPath

from changeloop import graph
from changeloop.config.schema import position
from changeloop.errors import Location, PreflightError, Problem
from changeloop.model import Plan, Provider, Service
from changeloop.plan import MULTI_REPOSITORY_ADAPTERS, display_path
from changeloop.providers.base import escapes
from changeloop.workspace import git_work_tree_refusal

SECRET_NAME = re.compile(r"TOKEN|SECRET|PASSWORD|KEY|CREDENTIAL", re.IGNORECASE)


class _Locator:
    """The marks the plan carries from its YAML files (never re-read), so checks point at lines."""

    def __init__(self, plan: Plan) -> None:
        self.evidence = plan.evidence.marks
        self.execution = plan.execution.marks if plan.execution else None
        self.evidence_shown = display_path(plan.root, plan.evidence.path)

    def provider(self, provider: Provider, *keys: str | int, key: bool = False) -> Location | None:
        if provider.origin == "configured" and self.execution is not None:
            return self.execution.location(("providers", provider.name, *keys), key=key or not keys)
        return provider.location

    def service(self, service: Service, *keys: str | int, key: bool = False) -> Location | None:
        if self.execution is not None:
            return self.execution.location(("services", service.name, *keys), key=key or not keys)
        return service.location

    def in_evidence(self, *keys: str | int, key: bool = False) -> Location:
        if self.evidence is None:
            return Location(self.evidence_shown)
        return self.evidence.location(keys, key=key)

    def in_execution(self, *keys: str | int, key: bool = False) -> Location | None:
        return self.execution.location(keys, key=key) if self.execution else None


def _repositories(plan: Plan, at: _Locator) -> Iterable[Problem]:
    for name, checkout in plan.repositories.items():
        where = (
            at.in_evidence("repositories", name)
            if plan.evidence.declared_repositories
            else at.in_evidence()
        )
        if not checkout.path.is_dir():
            yield Problem(
                "missing_repository",
                f"repository {name!r} ({checkout.relpath}) does not exist at {checkout.path}",
                where,
                fix=f"clone it there, or fix the path of {name!r} in evidence.yaml",
            )
        elif (refusal := git_work_tree_refusal(checkout.path)) is not None:
            reason, git_fix = refusal
            if git_fix is not None:  # git refuses a repository it found: say why, as git does
                yield Problem(
                    "git_refused",
                    f"repository {name!r} ({checkout.relpath}): git "
                    f"refuses {checkout.path}: {reason}",
                    where,
                    fix=git_fix,
                )
            else:
                yield Problem(
                    "not_a_git_worktree",
                    f"repository {name!r} ({checkout.relpath}) "
                    f"is not a git work tree: {checkout.path} ({reason})",
                    where,
                    fix=f"run `git init` in {checkout.path}, or point {name!r} at a checkout",
                )
    known = sorted(plan.repositories)

    def unknown(
        repo: str, where: Location | None, what: str, providers: tuple[str, ...] = ()
    ) -> Problem:
        return Problem(
            "unknown_repository",
            f"{what} names unknown repository {repo!r} (repositories: {', '.join(known)})",
            where,
            fix="use one of the repositories evidence.yaml declares",
            providers=providers,
        )

    for capability, repos in plan.evidence.requires.items():
        for i, repo in enumerate(repos or ()):
            if repo not in plan.repositories:
                yield unknown(
                    repo, at.in_evidence("requires", capability, i), f"requires.{capability}"
                )
    for claim in plan.evidence.claims.values():
        if claim.repository is not None and claim.repository not in plan.repositories:
            yield unknown(
                claim.repository,
                at.in_evidence("claims", claim.id, "repository"),
                f"claim {claim.id!r}",
            )
    for repo in plan.execution.setup if plan.execution else {}:
        if repo not in plan.repositories:
            yield unknown(
                repo, at.in_execution("repositories", repo, key=True), "execution.yaml repositories"
            )
    for service in plan.services.values():
        if service.repository is None:
            yield Problem(
                "service_without_repository",
                f"service {service.name!r} names no "
                f"repository and there are several ({', '.join(known)})",
                at.service(service),
                fix="add `repository: <name>` to the service",
            )
        elif service.repository not in plan.repositories:
            yield unknown(
                service.repository, at.service(service, "repository"), f"service {service.name!r}"
            )


def _secrets(
    env: dict[str, str],
    owner: str,
    locate: Callable[..., Location | None],
    providers: tuple[str, ...],
) -> Iterable[Problem]:
    for var, value in env.items():
        if value and SECRET_NAME.search(var):
            where = locate("env", var)
            yield Problem(
                "secret_in_env",
                f"{owner} sets {var} to a literal value; secret-like "
                "names must not be stored in execution.yaml",
                where,
                fix=f"remove it from env and add {var} to envFrom (the value is "
                "inherited and redacted from logs)",
                providers=providers,
            )


def _provider(plan: Plan, p: Provider, at: _Locator) -> Iterable[Problem]:
    from changeloop.providers import registry

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
    yield from _secrets(dict(p.env), label, lambda *k: at.provider(p, *k), me)
    for key, value in (("report", p.report), ("receipts", p.receipts)):
        if value is not None and escapes(value):
            yield _escape(label, key, value, at.provider(p, key), me)
    for i, glob in enumerate(p.inputs):
        if escapes(glob):
            yield _escape(label, "inputs", glob, at.provider(p, "inputs", i), me)


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


def _contract(plan: Plan, p: Provider, at: _Locator) -> Iterable[Problem]:
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


def _links(plan: Plan, at: _Locator) -> Iterable[Problem]:
    """Cross-provider refusals: report collisions, discovery links, cycles."""
    reports: dict[tuple[str | None, str], list[Provider]] = defaultdict(list)
    discovery: dict[str | None, list[Provider]] = defaultdict(list)
    for p in plan.providers.values():
        if p.report is not None:
            reports[(p.repository, PurePosixPath(p.report).as_posix())].append(p)
        if p.adapter == "test-discovery":
            discovery[p.repository].append(p)
    for (repo, report), writers in reports.items():
        if len(writers) > 1:
            names = tuple(w.name for w in writers)
            yield Problem(
                "report_collision",
                f"providers {', '.join(names)} all write report {report!r} in repository {repo!r}",
                at.provider(writers[1], "report"),
                fix="give each provider its own report path",
                providers=names,
            )
    for repo, providers in discovery.items():
        if len(providers) < 2:
            continue
        for p in providers:
            if p.name != "test" and p.discovery_provider is None:
                others = ", ".join(o.name for o in providers if o is not p)
                yield Problem(
                    "missing_discovery_link",
                    f"test-discovery provider {p.name!r} "
                    f"shares repository {repo!r} with {others}; only the provider "
                    "named 'test' gets the discovery receipt implicitly",
                    at.provider(p),
                    fix=f"add `discoveryProvider: {p.name}-discovery` "
                    "(the name its discovery receipt is issued under)",
                    providers=(p.name,),
                )
    edges = {name: list(p.depends_on) for name, p in plan.providers.items()}
    cycle = graph.find_cycle(edges)
    if cycle is not None:
        first = plan.providers[cycle[0]]
        yield Problem(
            "dependency_cycle",
            f"dependency cycle: {' → '.join(cycle)}",
            at.provider(first, "dependsOn"),
            fix="remove one dependsOn edge of the cycle",
            providers=tuple(cycle[:-1]),
        )


def _services(plan: Plan, at: _Locator) -> Iterable[Problem]:
    ports: dict[int, list[Service]] = defaultdict(list)
    for s in plan.services.values():
        label = f"service {s.name!r}"
        users = tuple(p.name for p in plan.providers.values() if s.name in p.services)
        yield from _secrets(dict(s.env), label, lambda *k, s=s: at.service(s, *k), users)
        probe = s.readiness
        if probe is None:
            yield Problem(
                "missing_readiness",
                f"{label} has no readiness probe; providers would race its start-up",
                at.service(s),
                providers=users,
                fix="add readiness: {url: http://127.0.0.1:<port>/, expect: "
                "{body: <text only your app serves>}}",
            )
            continue
        if probe.body is None and probe.body_regex is None and probe.header is None:
            yield Problem(
                "status_only_probe",
                f"{label}: readiness probe expects no body or "
                "header, so any server on that port (a leftover one) would pass it",
                at.service(s, "readiness", key=True),
                providers=users,
                fix="add expect: {body: <text only your app serves>} or "
                "expect: {header: {name: ..., value: ...}}",
            )
        if probe.body_regex is not None:
            try:
                re.compile(probe.body_regex)
            except re.error as exc:
                yield Problem(
                    "invalid_regex",
                    f"{label}: readiness bodyRegex does not compile: {exc}",
                    at.service(s, "readiness", "expect", "bodyRegex"),
                    providers=users,
                    fix="fix the regular expression",
                )
        if probe.port is None:
            yield Problem(
                "probe_without_port",
                f"{label}: readiness URL {probe.url!r} has no "
                "literal port, so changeloop cannot check the port is free first",
                at.service(s, "readiness", "url"),
                providers=users,
                fix="write the port in the URL, e.g. http://127.0.0.1:4173/",
            )
        else:
            ports[probe.port].append(s)
    for port, sharing in ports.items():
        if len(sharing) > 1:
            names = ", ".join(repr(s.name) for s in sharing)
            users = tuple(
                p.name
                for p in plan.providers.values()
                if any(s.name in p.services for s in sharing)
            )
            yield Problem(
                "port_collision",
                f"services {names} both probe port {port}",
                at.service(sharing[1], "readiness", "url"),
                providers=users,
                fix="give each service its own port",
            )


def check(plan: Plan) -> list[Problem]:
    """Every preflight problem of the plan, sorted by file position (empty = go)."""
    at = _Locator(plan)
    problems: list[Problem] = [*_repositories(plan, at), *_links(plan, at), *_services(plan, at)]
    from changeloop.grounding import entrypoints
    from changeloop.providers import registry

    problems += entrypoints.preflight(plan)  # DESIGN.md §11: a pattern matching nothing

    for provider in plan.providers.values():
        mine = list(_provider(plan, provider, at))
        adapter = registry.get(provider.adapter)
        # An adapter may check what preflight already checked generically (a contract
        # path escape, say); one message per code and provider is enough, ours first
        # because it points at the exact key.
        seen = {(m.code, m.providers) for m in mine}
        theirs = adapter.preflight(provider, plan) if adapter is not None else ()
        problems += mine + [t for t in theirs if (t.code, t.providers) not in seen]
    return sorted(problems, key=position)


def warnings(plan: Plan, environ: Mapping[str, str] | None = None) -> list[str]:
    """What does not stop a run but weakens it: envFrom values too short to be masked."""
    from changeloop.masking import MIN_LENGTH, short_values

    return [
        f"warning: the value of {name} (envFrom) is shorter than {MIN_LENGTH} characters, too"
        " short to be a secret: it is not masked in logs, reports or receipts"
        for name in short_values(plan, environ)
    ]


def enforce(plan: Plan) -> None:
    """Raise PreflightError (exit 2) carrying all problems, if there are any."""
    problems = check(plan)
    if problems:
        raise PreflightError(problems)

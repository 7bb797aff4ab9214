"""Cross-provider preflight: one report path per writer, discovery links, no cycle."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from pathlib import PurePosixPath

from changeloop.errors import Problem
from changeloop.model import Plan, Provider
from changeloop.preflight.locate import Locator
from changeloop.scheduling import graph


def links(plan: Plan, at: Locator) -> Iterable[Problem]:
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

"""Cross-provider preflight: one report path per writer, one issuer per discovery name,
no cycle.

A test-discovery provider issues its ``discovery`` receipt under its
``discoveryProvider`` or, without one, under its own name (``test-core`` →
``test-core``): several test-discovery providers share a repository as they are.
Refused only where two receipts would be issued under one name.
"""

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
    for p in plan.providers.values():
        if p.report is not None:
            reports[(p.repository, PurePosixPath(p.report).as_posix())].append(p)
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
    yield from _discovery_collisions(plan, at)
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


def _discovery_collisions(plan: Plan, at: Locator) -> Iterable[Problem]:
    """``discovery_collision``: a discovery receipt issued under a name another provider
    issues receipts under (its own name, or its discoveryProvider)."""
    owner: dict[str, Provider] = {}  # name -> the provider issuing receipts under it
    for p in plan.providers.values():
        owner.setdefault(p.name, p)
    for p in plan.providers.values():
        if p.adapter != "test-discovery" or p.discovery_provider is None:
            continue
        name = p.discovery_provider
        other = owner.get(name)
        if other is not None and other is not p:
            yield Problem(
                "discovery_collision",
                f"provider {p.name!r} issues its discovery receipt as {name!r}, a name "
                f"provider {other.name!r} issues receipts under already",
                at.provider(p, "discoveryProvider"),
                fix=f"give {p.name!r} a discoveryProvider no other provider uses (e.g. "
                f"`discoveryProvider: discovery-{p.name}`), or remove the key: its discovery "
                f"receipt is then issued under its own name",
                providers=tuple(sorted({p.name, other.name})),
            )
            continue
        owner[name] = p

"""Dependency order for providers (``dependsOn``), and the cycle when there is none.

A pure function, so preflight, ``--dry-run`` and the scheduler agree::

    >>> topological_order({"lint": [], "test": ["build"], "build": [], "e2e": ["test", "build"]})
    ['build', 'lint', 'test', 'e2e']
    >>> topological_order({"a": ["b"], "b": ["c"], "c": ["a"]})
    Traceback (most recent call last):
    ...
    changeloop.scheduling.graph.CycleError: dependency cycle: a → b → c → a

Each node comes after everything it depends on; among nodes that are ready at
the same time the order is by name (code point), so output is deterministic.
Edges to names that are not nodes are ignored here (preflight reports them).
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping, Sequence


class CycleError(ValueError):
    """The edges contain a cycle; ``cycle`` lists it with the first node repeated last."""

    def __init__(self, cycle: list[str]) -> None:
        self.cycle = cycle
        super().__init__(f"dependency cycle: {' → '.join(cycle)}")


def find_cycle(edges: Mapping[str, Sequence[str]]) -> list[str] | None:
    """One cycle (``[a, b, c, a]``), starting from the smallest name on it, or None."""
    state: dict[str, int] = {}  # 1 = on the current path, 2 = done
    for start in sorted(edges):
        if start in state:
            continue
        path: list[str] = [start]
        iters = [iter(sorted(d for d in edges[start] if d in edges))]
        state[start] = 1
        while iters:
            nxt = next(iters[-1], None)
            if nxt is None:
                state[path.pop()] = 2
                iters.pop()
                continue
            if state.get(nxt) == 1:
                cycle = path[path.index(nxt) :]
                pivot = cycle.index(min(cycle))
                rotated = cycle[pivot:] + cycle[:pivot]
                return [*rotated, rotated[0]]
            if nxt not in state:
                state[nxt] = 1
                path.append(nxt)
                iters.append(iter(sorted(d for d in edges[nxt] if d in edges)))
    return None


def topological_order(edges: Mapping[str, Sequence[str]]) -> list[str]:
    """Nodes ordered so each follows its dependencies; CycleError if impossible."""
    waiting = {node: {d for d in deps if d in edges and d != node} for node, deps in edges.items()}
    for node, deps in edges.items():
        if node in deps:
            raise CycleError([node, node])
    dependents: dict[str, list[str]] = {node: [] for node in edges}
    for node, pending in waiting.items():
        for dep in pending:
            dependents[dep].append(node)
    ready = [node for node, deps in waiting.items() if not deps]
    heapq.heapify(ready)
    order: list[str] = []
    while ready:
        node = heapq.heappop(ready)
        order.append(node)
        for dependent in dependents[node]:
            waiting[dependent].discard(node)
            if not waiting[dependent]:
                heapq.heappush(ready, dependent)
    if len(order) != len(edges):
        cycle = find_cycle(edges)
        raise CycleError(cycle or sorted(set(edges) - set(order)))
    return order

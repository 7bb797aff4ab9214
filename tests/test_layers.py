"""The package's layers are a contract (pyproject's [tool.importlinter]), and nothing imports in a circle.

Imports written inside functions count as much as those at the top: a late
import that climbs a layer is still a climb. The layer contract leaves
``TYPE_CHECKING`` imports out (they never run); the circle check counts them too,
so no two modules lean on each other even for their types.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import grimp
from repo_paths import REPO_ROOT


def test_the_layer_contract_holds() -> None:
    lint = Path(sys.executable).with_name("lint-imports")
    done = subprocess.run(
        [str(lint), "--no-cache"], cwd=REPO_ROOT, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 broken" in done.stdout


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    out: list[list[str]] = []
    counter = 0
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        top = stack.pop()
                        on_stack.discard(top)
                        component.append(top)
                        if top == node:
                            break
                    if len(component) > 1:
                        out.append(sorted(component))
                continue
            if child not in index:
                index[child] = low[child] = counter
                counter += 1
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(sorted(edges.get(child, ())))))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
    return out


def test_no_module_imports_itself_back_through_others() -> None:
    graph = grimp.build_graph(
        "changeloop", include_external_packages=False, exclude_type_checking_imports=False
    )
    # A package's __init__ counts like any module: one holding code its submodules import
    # while importing them is a circle too (docs/decisions/202).
    edges = {module: graph.find_modules_directly_imported_by(module) for module in graph.modules}
    assert _cycles(edges) == []


def test_the_cycle_finder_finds_a_cycle() -> None:
    # The check above cannot pass for want of finding: a known circle is found.
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]

"""Citations that do not say their depth, found in the test files before anything runs.

A citation's depth (``unit``, ``component``, ``wiring``, ``standards-integration``,
``smoke``) places the test; once a repository declares entry points, ``prove``
fails a receipt with a citation that has none (``citation-depth-missing``).
Doctor reads the repository's pytest files with ``ast`` (never importing them)
for ``claim`` markers without ``depth=``: a warning where no entry points are
declared, an error where ``prove`` would fail.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from changeloop.detect.doctor.finding import DoctorFinding
from changeloop.model import Repository
from changeloop.project.manifests import walk_files

MAX_BYTES = 1024 * 1024
MAX_NAMED = 20


def _is_test_file(path: Path) -> bool:
    name = path.name
    return name.startswith("test_") or name.endswith("_test.py") or name == "conftest.py"


def _claim_call(node: ast.AST) -> ast.Call | None:
    """``pytest.mark.claim(...)`` / ``mark.claim(...)``, or None."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
        return None
    owner = node.func.value
    if node.func.attr != "claim" or not isinstance(owner, ast.Attribute | ast.Name):
        return None
    name = owner.attr if isinstance(owner, ast.Attribute) else owner.id
    return node if name == "mark" else None


def depthless(source: str) -> Iterator[tuple[int, str]]:
    """(line, test or ``module``) of each ``claim`` marker without ``depth=``."""
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            for decorator in node.decorator_list:
                call = _claim_call(decorator)
                if call is not None and not any(k.arg == "depth" for k in call.keywords):
                    yield call.lineno, node.name
        elif isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "pytestmark" for t in node.targets
        ):
            for sub in ast.walk(node.value):
                call = _claim_call(sub)
                if call is not None and not any(k.arg == "depth" for k in call.keywords):
                    yield call.lineno, "pytestmark"


def depth_findings(repo: Repository, entry_points: bool) -> list[DoctorFinding]:
    """One finding per repository naming the citations without a depth (file:line test)."""
    named: list[str] = []
    for path in walk_files(repo.path, (".py",)):
        if not _is_test_file(path):
            continue
        try:
            if path.stat().st_size > MAX_BYTES:
                continue
            found = list(depthless(path.read_text(encoding="utf-8")))
        except (OSError, UnicodeDecodeError, SyntaxError, ValueError, RecursionError):
            continue
        rel = path.relative_to(repo.path).as_posix()
        named.extend(f"{rel}:{line} {test}" for line, test in found)
    if not named:
        return []
    shown = "; ".join(named[:MAX_NAMED]) + (
        f" (and {len(named) - MAX_NAMED} more)" if len(named) > MAX_NAMED else ""
    )
    why = (
        "the repository declares entry points, so prove fails the test receipt"
        if entry_points
        else "prove accepts them while no entry points are declared, but cannot place them"
    )
    return [
        DoctorFinding(
            "citation-depth-missing",
            f"{len(named)} citation(s) in {repo.name} say no depth ({why}): {shown}",
            'give each claim marker its depth: @pytest.mark.claim("id", depth="unit") — one of '
            "unit, component, wiring, standards-integration, smoke (e2e is smoke)",
            None,
            severity="error" if entry_points else "warning",
            repository=repo.name,
        )
    ]

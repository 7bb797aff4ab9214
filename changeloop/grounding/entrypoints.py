"""Resolve ``entryPoints`` patterns to functions, reading source with ``ast`` (never importing).

Example::

    found = resolve(Path("/repo"), ("pkg/api.py::create_*", "pkg/cli.py::main"))
    found.functions          # (EntryPoint("pkg/api.py", "create_app", 3), ...)
    found.unmatched          # ("pkg/cli.py::main",) when no such function exists

A pattern is ``<file glob>::<function glob>``: the file glob is matched like
``pathlib`` globs relative to the repository (``**`` crosses folders), the
function glob with ``fnmatch`` against each function's qualified name
(``create_app``, ``Api.handle``, ``outer.<locals>.inner``).
"""

from __future__ import annotations

import ast
import fnmatch
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from changeloop.errors import Problem
from changeloop.grounding.qualnames import qualified_functions
from changeloop.model import Plan

_SKIP_PARTS = frozenset({"node_modules", "site-packages", "dist-packages", "__pycache__"})
MAX_SOURCE_BYTES = 4 * 1024 * 1024


@dataclass(frozen=True)
class EntryPoint:
    file: str  # relative to the repository, POSIX
    qualname: str
    line: int

    def to_json(self) -> dict[str, object]:
        return {"file": self.file, "qualname": self.qualname, "line": self.line}


@dataclass(frozen=True)
class Resolved:
    functions: tuple[EntryPoint, ...]
    unmatched: tuple[str, ...]


def split(pattern: str) -> tuple[str, str]:
    """``"pkg/api.py::create_*"`` → ``("pkg/api.py", "create_*")``."""
    file_glob, _, function_glob = pattern.partition("::")
    return file_glob.strip(), function_glob.strip()


def functions(source: str) -> Iterator[tuple[str, int]]:
    """(qualname, first line) of every function in ``source``, as ``co_qualname`` spells it."""
    return ((name, func.lineno) for name, func in qualified_functions(ast.parse(source)))


def _files(root: Path, file_glob: str) -> list[Path]:
    try:
        found = sorted(root.glob(file_glob))
    except (ValueError, OSError):
        return []
    out = []
    for path in found:
        rel = path.relative_to(root).parts
        if any(p.startswith(".") or p in _SKIP_PARTS for p in rel[:-1]):
            continue
        if path.suffix == ".py" and path.is_file():
            out.append(path)
    return out


def _source(path: Path) -> str | None:
    try:
        if path.stat().st_size > MAX_SOURCE_BYTES:
            return None
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def resolve(root: Path, patterns: Sequence[str]) -> Resolved:
    """Every function the patterns match under ``root``, and the patterns that match none."""
    found: dict[tuple[str, str], EntryPoint] = {}
    unmatched: list[str] = []
    for pattern in patterns:
        file_glob, function_glob = split(pattern)
        hits = 0
        for path in _files(root, file_glob):
            text = _source(path)
            if text is None:
                continue
            try:
                defined = list(functions(text))
            except (SyntaxError, ValueError, RecursionError):
                continue
            rel = path.relative_to(root).as_posix()
            for qualname, line in defined:
                if fnmatch.fnmatchcase(qualname, function_glob):
                    hits += 1
                    found.setdefault((rel, qualname), EntryPoint(rel, qualname, line))
        if hits == 0:
            unmatched.append(pattern)
    return Resolved(tuple(found.values()), tuple(unmatched))


def preflight(plan: Plan) -> list[Problem]:
    """A pattern that matches no function is refused, naming it (docs/grounding.md)."""
    problems: list[Problem] = []
    locations = plan.execution.entry_point_locations if plan.execution else {}
    for name, repo in plan.repositories.items():
        if not repo.entry_points:
            continue
        for pattern in resolve(repo.path, repo.entry_points).unmatched:
            file_glob, function_glob = split(pattern)
            problems.append(
                Problem(
                    code="entry_point_unmatched",
                    message=(
                        f"entry point {pattern!r} of repository {name!r} matches no function "
                        f"(no function named like {function_glob!r} in files matching "
                        f"{file_glob!r})"
                    ),
                    location=locations.get(name),
                    fix="fix the pattern (`<file glob>::<function glob>`, relative to the "
                    "repository) or remove it from repositories."
                    f"{name}.entryPoints in execution.yaml",
                )
            )
    return problems

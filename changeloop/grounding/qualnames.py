"""A module's functions by qualified name, as Python's ``co_qualname`` spells them.

Example::

    tree = ast.parse("class Api:\\n    def handle(self):\\n        def inner(): ...\\n")
    [name for name, _ in qualified_functions(tree)]   # ["Api.handle", "Api.handle.<locals>.inner"]

The tracer records ``co_qualname``; ``entryPoints`` patterns (``entrypoints.py``)
and mutation targets (``mutation/mutants.py``) are matched against it, so both
read a file's functions through this one walker and always agree on the names.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

Function = ast.FunctionDef | ast.AsyncFunctionDef


def qualified_functions(tree: ast.AST) -> Iterator[tuple[str, Function]]:
    """(qualname, node) of every function under ``tree``, in source order, nested ones too."""
    yield from _walk(tree, "")


def _walk(node: ast.AST, prefix: str) -> Iterator[tuple[str, Function]]:
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
            name = f"{prefix}{child.name}"
            yield name, child
            yield from _walk(child, f"{name}.<locals>.")
        elif isinstance(child, ast.ClassDef):
            yield from _walk(child, f"{prefix}{child.name}.")
        else:
            yield from _walk(child, prefix)

"""In-house AST mutants of named functions (no mutation framework; Python's own parser).

Example::

    source = "def add(a, b):\\n    return a + b\\n"
    found = mutants_of(source, "calc.py", {"add"})
    [m.kind for m in found]        # ["arithmetic", "return-value"]
    found[0].source                # "def add(a, b):\\n    return a - b"

Operators (docs/grounding.md): comparison (``<``↔``<=``, ``>``↔``>=``, ``==``↔``!=``,
``is``↔``is not``, ``in``↔``not in``), boolean (``and``↔``or``, ``not x`` → ``x``),
arithmetic (``+``↔``-``, ``*``↔``/``, ``//`` → ``*``, ``%`` → ``//``, ``**`` → ``*``,
in expressions and augmented assignments), constant (numbers ``n`` → ``n + 1``,
booleans flipped, non-empty strings emptied, empty strings filled; docstrings
and f-string text are left alone) and return-value (``return x`` → ``return
None``). Only the body of each named function is mutated, not functions
nested in it (they have their own names). One mutant per site, in source
order; each mutant is the whole module, re-rendered by ``ast.unparse``.
"""

from __future__ import annotations

import ast
import copy
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from changeloop.grounding.qualnames import qualified_functions

KINDS = ("comparison", "boolean", "arithmetic", "constant", "return-value")

_COMPARE: dict[type[ast.cmpop], type[ast.cmpop]] = {
    ast.Lt: ast.LtE,
    ast.LtE: ast.Lt,
    ast.Gt: ast.GtE,
    ast.GtE: ast.Gt,
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.Is: ast.IsNot,
    ast.IsNot: ast.Is,
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
}
_ARITH: dict[type[ast.operator], type[ast.operator]] = {
    ast.Add: ast.Sub,
    ast.Sub: ast.Add,
    ast.Mult: ast.Div,
    ast.Div: ast.Mult,
    ast.FloorDiv: ast.Mult,
    ast.Mod: ast.FloorDiv,
    ast.Pow: ast.Mult,
}
_SYMBOL = {
    ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!=",
    ast.Is: "is", ast.IsNot: "is not", ast.In: "in", ast.NotIn: "not in", ast.Add: "+",
    ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//", ast.Mod: "%", ast.Pow: "**",
}  # fmt: skip


@dataclass(frozen=True)
class Mutant:
    file: str  # relative to the repository, POSIX
    qualname: str
    line: int
    kind: str  # one of KINDS
    description: str  # "line 4: `>` → `>=`"
    source: str  # the whole mutated module
    # the mutated expression may not run whenever its line does (a right operand of
    # `and`/`or`, a branch of `x if c else y`, a comprehension's body, `if c: return x`)
    conditional: bool = False
    method: bool = False  # the function is defined in a class body

    @property
    def key(self) -> str:
        """Stable identity: where and what (for deterministic selection and reports)."""
        return f"{self.file}::{self.qualname}:{self.line}:{self.description}"

    @property
    def where(self) -> str:
        """``module:function``, or ``module:Class#method`` for a method."""
        module = self.file.removesuffix(".py").removeprefix("src/").replace("/", ".")
        module = module.removesuffix(".__init__")
        name = self.qualname
        if self.method and "." in name:
            owner, _, method = name.rpartition(".")
            name = f"{owner}#{method}"
        return f"{module}:{name}"

    @property
    def change(self) -> str:
        """What the mutant changed, without its line: "`>` → `>=`"."""
        return self.description.split(": ", 1)[-1]


# A site: (node index in ast.walk order, kind, description, apply(copied node) -> new node)
_Apply = Callable[[ast.AST], ast.AST]
_Site = tuple[int, str, str, _Apply]


def _targets(tree: ast.Module, qualnames: set[str]) -> Iterator[tuple[str, ast.AST]]:
    """(qualname, function node) of the named functions, qualified like ``co_qualname``."""
    return ((name, func) for name, func in qualified_functions(tree) if name in qualnames)


def _methods(tree: ast.Module) -> set[int]:
    """``id`` of every function defined directly in a class body."""
    return {
        id(child)
        for node in ast.walk(tree)
        if isinstance(node, ast.ClassDef)
        for child in node.body
        if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef)
    }


def _conditional(func: ast.AST) -> set[int]:
    """``id`` of the nodes of a function's body that may not run whenever their line does."""
    out: set[int] = set()

    def mark(node: ast.AST) -> None:
        out.update(id(n) for n in ast.walk(node))

    for node in _body_nodes(func):
        if isinstance(node, ast.BoolOp):
            for value in node.values[1:]:
                mark(value)
        elif isinstance(node, ast.IfExp):
            mark(node.body)
            mark(node.orelse)
        elif isinstance(node, ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp):
            for part in (*node.generators[1:], *node.generators[0].ifs):
                mark(part)
            for part in (node.key, node.value) if isinstance(node, ast.DictComp) else (node.elt,):
                mark(part)
        elif isinstance(node, ast.Assert) and node.msg is not None:
            mark(node.msg)
        elif isinstance(node, ast.If | ast.For | ast.AsyncFor | ast.While | ast.With | ast.Try):
            header = getattr(node, "lineno", 0)
            for field in ("body", "orelse", "finalbody", "handlers"):
                for stmt in getattr(node, field, []) or []:
                    if getattr(stmt, "lineno", -1) == header:
                        mark(stmt)  # `if c: return x` on one line
    return out


def _body_nodes(func: ast.AST) -> Iterator[ast.AST]:
    """Nodes of a function's own body (decorators, defaults and nested defs excluded)."""
    todo: list[ast.AST] = list(getattr(func, "body", []))
    while todo:
        node = todo.pop(0)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda):
            continue
        yield node
        todo.extend(ast.iter_child_nodes(node))


def _docstring(func: ast.AST) -> ast.AST | None:
    body = getattr(func, "body", [])
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        return body[0].value if isinstance(body[0].value.value, str) else None
    return None


def _replace_op(new: type[ast.AST]) -> _Apply:
    def apply(node: ast.AST) -> ast.AST:
        node.op = new()  # type: ignore[attr-defined]
        return node

    return apply


def _replace_cmp(index: int, new: type[ast.cmpop]) -> _Apply:
    def apply(node: ast.AST) -> ast.AST:
        assert isinstance(node, ast.Compare)
        node.ops[index] = new()
        return node

    return apply


def _constant(value: object) -> tuple[object, str] | None:
    if isinstance(value, bool):
        return (not value), f"{value} → {not value}"
    if isinstance(value, int | float) and not isinstance(value, bool):
        return value + 1, f"{value!r} → {value + 1!r}"
    if isinstance(value, str):
        new = "" if value else "mutated"
        return new, f"{value[:20]!r} → {new!r}"
    return None


def _sites(func: ast.AST, index: dict[int, int]) -> Iterator[_Site]:
    doc = _docstring(func)
    fstring_parts: set[int] = set()
    for node in _body_nodes(func):
        if isinstance(node, ast.JoinedStr):
            fstring_parts.update(id(v) for v in node.values)
    for node in _body_nodes(func):
        at = index[id(node)]
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.Compare):
            for i, op in enumerate(node.ops):
                new_cmp = _COMPARE.get(type(op))
                if new_cmp is not None:
                    what = f"line {line}: `{_SYMBOL[type(op)]}` → `{_SYMBOL[new_cmp]}`"
                    yield at, "comparison", what, _replace_cmp(i, new_cmp)
        elif isinstance(node, ast.BoolOp):
            flip: type[ast.boolop] = ast.Or if isinstance(node.op, ast.And) else ast.And
            what = f"line {line}: `{'and' if flip is ast.Or else 'or'}` → "
            what += f"`{'or' if flip is ast.Or else 'and'}`"
            yield at, "boolean", what, _replace_op(flip)
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            yield at, "boolean", f"line {line}: `not x` → `x`", lambda n: n.operand  # type: ignore[attr-defined]
        elif isinstance(node, ast.BinOp | ast.AugAssign):
            new_op = _ARITH.get(type(node.op))
            if new_op is not None:
                what = f"line {line}: `{_SYMBOL[type(node.op)]}` → `{_SYMBOL[new_op]}`"
                yield at, "arithmetic", what, _replace_op(new_op)
        elif isinstance(node, ast.Constant) and node is not doc and id(node) not in fstring_parts:
            changed = _constant(node.value)
            if changed is not None:
                new_value, what = changed
                yield at, "constant", f"line {line}: {what}", _set_value(new_value)
        elif isinstance(node, ast.Return) and not _returns_none(node):
            yield at, "return-value", f"line {line}: return … → return None", _return_none


def _returns_none(node: ast.Return) -> bool:
    return node.value is None or (isinstance(node.value, ast.Constant) and node.value.value is None)


def _set_value(value: object) -> _Apply:
    def apply(node: ast.AST) -> ast.AST:
        node.value = value  # type: ignore[attr-defined]
        return node

    return apply


def _return_none(node: ast.AST) -> ast.AST:
    node.value = ast.Constant(value=None)  # type: ignore[attr-defined]
    return node


def _substitute(tree: ast.Module, at: int, apply: _Apply) -> str:
    """The module with the ``at``-th node (ast.walk order) replaced by ``apply(copy)``."""
    mutated = copy.deepcopy(tree)
    nodes = list(ast.walk(mutated))
    target = nodes[at]
    replacement = apply(target)
    if replacement is not target:
        for parent in nodes:
            for field, value in ast.iter_fields(parent):
                if value is target:
                    setattr(parent, field, replacement)
                elif isinstance(value, list):
                    for i, item in enumerate(value):
                        if item is target:
                            value[i] = replacement
    return ast.unparse(ast.fix_missing_locations(mutated))


def mutants_of(source: str, file: str, qualnames: set[str]) -> list[Mutant]:
    """Every mutant of the named functions in ``source``, in source order."""
    tree = ast.parse(source)
    nodes = list(ast.walk(tree))
    index = {id(node): i for i, node in enumerate(nodes)}
    methods = _methods(tree)
    out: list[Mutant] = []
    for qualname, func in _targets(tree, qualnames):
        maybe = _conditional(func)
        for at, kind, what, apply in _sites(func, index):
            line = int(what.split(":", 1)[0].removeprefix("line "))
            out.append(
                Mutant(
                    file,
                    qualname,
                    line,
                    kind,
                    what,
                    _substitute(tree, at, apply),
                    conditional=id(nodes[at]) in maybe,
                    method=id(func) in methods,
                )
            )
    out.sort(key=lambda m: (m.line, KINDS.index(m.kind), m.description))
    return out

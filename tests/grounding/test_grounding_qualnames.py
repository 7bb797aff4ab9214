"""The one walker naming a file's functions: it must spell names exactly as CPython does.

The tracer records ``co_qualname``; entry points and mutation targets are matched
against what the walker says, so any difference would make a traced function
unmatchable. The reference here is CPython's own compiler, not a hand-written list.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
import types

from changeloop.grounding.entrypoints import functions
from changeloop.grounding.qualnames import qualified_functions
from changeloop.mutation.mutants import mutants_of

SOURCE = textwrap.dedent("""\
    import functools

    def top(a):
        def helper(b):
            return b + 1
        return helper(a) > 0

    async def fetch(x):
        return x * 2

    class Api:
        def handle(self, n):
            return n == 3

        class Inner:
            async def deep(self):
                lam = lambda y: y
                return lam(1)

        @functools.cache
        def cached(self):
            def closure():
                def innermost():
                    return True
                return innermost
            return closure

    if True:
        def conditional():
            return "x"
    """)


def _compiled_qualnames(code: types.CodeType) -> list[str]:
    """Every named function's ``co_qualname`` in ``code``, as the interpreter names it.

    Class bodies are code objects too but not optimized; lambdas and comprehensions
    are functions without a name of their own (``<lambda>``, ``<listcomp>``).
    """
    out: list[str] = []
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            optimized = bool(const.co_flags & inspect.CO_OPTIMIZED)
            if optimized and not const.co_name.startswith("<"):
                out.append(const.co_qualname)
            out.extend(_compiled_qualnames(const))
    return out


def test_names_agree_with_cpython_co_qualname() -> None:
    walked = [name for name, _ in qualified_functions(ast.parse(SOURCE))]
    compiled = _compiled_qualnames(compile(SOURCE, "m.py", "exec"))
    assert walked == compiled  # same names, same (source) order
    assert "Api.cached.<locals>.closure.<locals>.innermost" in walked
    assert "Api.Inner.deep" in walked and "conditional" in walked
    assert len(walked) == 9


def test_source_order_and_first_lines() -> None:
    found = list(functions(SOURCE))
    assert [name for name, _ in found][:3] == ["top", "top.<locals>.helper", "fetch"]
    lines = SOURCE.splitlines()
    for name, line in found:
        assert lines[line - 1].lstrip().startswith(("def ", "async def ", "@")), name
        assert name.rsplit(".", 1)[-1] in lines[line - 1]


def test_entry_points_and_mutants_name_the_same_functions() -> None:
    """Every function entry points can name is a function mutation can target, and back."""
    named = {name for name, _ in functions(SOURCE)}
    mutated = {m.qualname for m in mutants_of(SOURCE, "m.py", named)}
    # every function here has at least one mutation site (a return, compare or constant)
    assert mutated == named
    assert {m.qualname for m in mutants_of(SOURCE, "m.py", {"Api.handle"})} == {"Api.handle"}
    assert mutants_of(SOURCE, "m.py", {"handle"}) == []  # a bare name is not the qualname

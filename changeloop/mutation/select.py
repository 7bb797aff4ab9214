"""Which tests cite a claim, which functions they ran, and the mutants of those functions.

Example::

    tests, functions = plan_for_claim(traced, "order-total")
    # tests: ["tests/test_api.py::test_total"], functions: {"shop/api.py": {"create_total"}}
    mutants = claim_mutants(copy, functions, limit=50, seed="…")   # sampled deterministically
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from changeloop.mutation.mutants import Mutant, mutants_of


def plan_for_claim(
    traced: Mapping[str, Mapping[str, Any]], claim: str
) -> tuple[list[str], dict[str, set[str]]]:
    """(every test citing ``claim``, file -> qualnames its citing tests ran under entry points)."""
    tests: list[str] = []
    functions: dict[str, set[str]] = {}
    for nodeid, record in sorted(traced.items()):
        cited = record.get("claims")
        if not isinstance(cited, Mapping | list) or claim not in cited:
            continue
        tests.append(nodeid)
        for entry in record.get("functions") or ():
            if isinstance(entry, list | tuple) and len(entry) >= 2:
                functions.setdefault(str(entry[0]), set()).add(str(entry[1]))
    return tests, functions


def claim_mutants(
    root: Path, functions: Mapping[str, set[str]], limit: int | None, seed: str
) -> list[Mutant]:
    """The mutants of one claim's functions under ``root`` (sampled to ``limit``)."""
    found: list[Mutant] = []
    for file in sorted(functions):
        path = root / file
        try:
            source = path.read_text(encoding="utf-8")
            found.extend(mutants_of(source, file, functions[file]))
        except (OSError, UnicodeDecodeError, SyntaxError, ValueError, RecursionError):
            continue
    if limit is not None and len(found) > limit:
        chosen = random.Random(seed).sample(range(len(found)), limit)  # noqa: S311 — a sample
        found = [found[i] for i in sorted(chosen)]
    return found


def compiles(mutant: Mutant) -> bool:
    """Whether the mutant is Python at all (one that is not is skipped without a run)."""
    try:
        compile(mutant.source, mutant.file, "exec")
    except (SyntaxError, ValueError):
        return False
    return True


def reaching_tests(
    traced: Mapping[str, Mapping[str, Any]], tests: list[str], mutant: Mutant
) -> list[str]:
    """The citing tests whose traces ran the mutated function (only they can kill it)."""
    out = []
    for nodeid in tests:
        for entry in traced.get(nodeid, {}).get("functions") or ():
            if (
                isinstance(entry, list | tuple)
                and len(entry) >= 2
                and (str(entry[0]), str(entry[1])) == (mutant.file, mutant.qualname)
            ):
                out.append(nodeid)
                break
    return out


def reached(
    traced: Mapping[str, Mapping[str, Any]], tests: list[str], mutant: Mutant
) -> bool | None:
    """Whether the mutated expression ran under ``tests``, as their traced lines show.

    False when no test ran its line (and every test's lines were recorded); True
    when one did and the expression runs whenever its line does; None otherwise.
    """
    known = bool(tests)
    ran = False
    for nodeid in tests:
        lines = traced.get(nodeid, {}).get("lines")
        if not isinstance(lines, Mapping):
            known = False
            continue
        found = lines.get(mutant.file)
        if isinstance(found, list) and mutant.line in found:
            ran = True
    if ran:
        return None if mutant.conditional else True
    return False if known else None

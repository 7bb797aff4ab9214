"""Refuse a plan before anything runs (docs/scheduling.md), reporting every problem at once.

A user fixing wiring wants the whole list, not one error per attempt, so
:func:`check` collects everything (sorted by file position) and :func:`enforce`
raises it as one :class:`PreflightError` (exit 2)::

    enforce(build_plan(root, change))   # or: for p in check(plan): print(p.render())

Every Problem names the providers involved, points at the offending line of
execution.yaml / evidence.yaml where the plan came from a file, and says the fix.
"""

from __future__ import annotations

from collections.abc import Mapping

from changeloop.config.schema import position
from changeloop.errors import PreflightError, Problem
from changeloop.masking import MIN_LENGTH, short_values
from changeloop.model import Plan
from changeloop.preflight.adapter_keys import misplaced_keys
from changeloop.preflight.capabilities import capability_typos
from changeloop.preflight.links import links
from changeloop.preflight.locate import Locator
from changeloop.preflight.providers import provider_problems
from changeloop.preflight.repositories import repositories
from changeloop.preflight.services import services
from changeloop.providers import registry


def check(plan: Plan) -> list[Problem]:
    """Every preflight problem of the plan, sorted by file position (empty = go)."""
    at = Locator(plan)
    problems: list[Problem] = [*repositories(plan, at), *links(plan, at), *services(plan, at)]
    problems += capability_typos(plan, at)

    if any(repo.entry_points for repo in plan.repositories.values()):
        from changeloop.grounding import entrypoints  # noqa: PLC0415 - only repositories with entry points need it

        problems += entrypoints.preflight(plan)  # docs/grounding.md: a pattern matching nothing

    for provider in plan.providers.values():
        mine = list(provider_problems(plan, provider, at))
        adapter = registry.get(provider.adapter)
        # An adapter may check what preflight already checked generically (a contract
        # path escape, say); one message per code and provider is enough, ours first
        # because it points at the exact key.
        seen = {(m.code, m.providers) for m in mine}
        theirs = adapter.preflight(provider, plan) if adapter is not None else ()
        problems += mine + [t for t in theirs if (t.code, t.providers) not in seen]
    return sorted(problems, key=position)


def warnings(plan: Plan, environ: Mapping[str, str] | None = None) -> list[str]:
    """What does not stop a run but weakens it: envFrom values too short to be masked,
    keys the provider's adapter does not read."""
    return [
        f"warning: the value of {name} (envFrom) is shorter than {MIN_LENGTH} characters, too"
        " short to be a secret: it is not masked in logs, reports or receipts"
        for name in short_values(plan, environ)
    ] + [f"warning: {problem.render()}" for problem in located_warnings(plan)]


def located_warnings(plan: Plan) -> list[Problem]:
    """The warnings that point at a line of a file (``evidence doctor`` shows them too)."""
    return sorted(misplaced_keys(plan), key=position)


def enforce(plan: Plan) -> None:
    """Raise PreflightError (exit 2) carrying all problems, if there are any."""
    problems = check(plan)
    if problems:
        raise PreflightError(problems)

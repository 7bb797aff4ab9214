"""Derived tests from the project's own test script: one provider per runner call.

``npm test`` running ``vitest run && vitest run --config e2e`` becomes two test
providers, each with changeloop's reporter added, and a ``pretest`` build
becomes a ``build`` provider they depend on.
"""

from __future__ import annotations

import shlex
from functools import partial
from pathlib import Path

from changeloop.detect import scripts
from changeloop.detect.derived_names import provider_name, test_provider
from changeloop.detect.runner_commands import script_command
from changeloop.detect.types import Detection
from changeloop.model import Provider


def from_scripts(
    det: Detection, repo_name: str, path: Path, single: bool
) -> dict[str, tuple[Provider, str]]:
    """One test provider per runner invocation of the project's own test script.

    Only invocations of the selected runner count (a Playwright run in `test` is
    the `browser` capability's business); build steps become a `build` provider
    the tests depend on.
    """
    plan = scripts.runner_calls(path)
    calls = [c for c in plan.calls if c.adapter == det.adapter]
    if not calls:
        return {}
    out: dict[str, tuple[Provider, str]] = {}
    depends: tuple[str, ...] = ()
    build = _build_step(plan, repo_name, single)
    if build is not None:
        out[build[0].name] = build
        depends = (build[0].name,)
    taken: set[str] = set()
    for index, call in enumerate(calls):
        extra = None if index == 0 else _suffix(call, index, taken)
        provider = test_provider(
            repo_name,
            single,
            extra,
            partial(script_command, call),
            det.confidence,
            depends_on=depends,
        )
        out[provider.name] = (provider, f"package.json scripts.{call.script}")
    return out


def _suffix(call: scripts.RunnerCall, index: int, taken: set[str]) -> str:
    """`test:edge` → `edge`; a second call of the same script → its position."""
    base = call.script.split(":", 1)[-1] if ":" in call.script else call.script
    base = "".join(ch if ch.isalnum() or ch == "-" else "-" for ch in base).strip("-") or "run"
    name = base if base not in taken and base != "test" else f"{base}-{index + 1}"
    taken.add(name)
    return name


def _build_step(
    plan: scripts.ScriptPlan, repo_name: str, single: bool
) -> tuple[Provider, str] | None:
    """The `pretest` build (or `npm run build &&` prefix) as one command provider."""
    lines = [f"npm run {shlex.quote(s)}" for s in plan.steps] + plan.raw_steps
    if not lines:
        return None
    if len(plan.steps) == 1 and not plan.raw_steps:
        argv: tuple[str, ...] = ("npm", "run", plan.steps[0])
    else:
        argv = ("sh", "-c", " && ".join(lines))
    name = provider_name("build", repo_name, single)
    provider = Provider(
        name=name,
        adapter="command",
        capability=name,
        repository=repo_name,
        command=argv,
        origin="derived",
        confidence="high",
    )
    return provider, "package.json scripts (the build the test script runs first)"

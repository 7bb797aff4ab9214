"""Derived tests from the project's own test script: one provider per runner call.

``npm test`` running ``vitest run && vitest run --config e2e`` becomes two test
providers, each with changeloop's reporter added, and a ``pretest`` build
becomes a ``build`` provider they depend on. A test script that runs each
workspace member's own test script (``pnpm -r run test``) becomes one provider
per member runner call, run in that member's folder (``workdir``) with its own
config, after the member's own build (``build-<member>``) and the root's.
"""

from __future__ import annotations

import re
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
    """One test provider per unit-runner invocation of the project's own test script.

    A Playwright run in `test` is the `browser` capability's business; build steps
    become `build` providers the tests depend on.
    """
    plan = scripts.runner_calls(path)
    calls = [c for c in plan.calls if c.adapter in scripts.UNIT_RUNNERS]
    if not calls:
        return {}
    out: dict[str, tuple[Provider, str]] = {}
    root_depends: tuple[str, ...] = ()
    build = _build_step(
        plan.steps, plan.raw_steps, provider_name("build", repo_name, single), repo_name
    )
    if build is not None:
        provider = build[0]
        why = f"{plan.steps_from} (the build CI runs first)" if plan.steps_from else build[1]
        out[provider.name] = (provider, why)
        root_depends = (provider.name,)
    taken: set[str] = set()
    members: dict[str, tuple[str, ...]] = {}  # member folder -> what its tests depend on
    first = True
    for index, call in enumerate(calls):
        depends = root_depends
        if call.cwd:
            if call.cwd not in members:
                members[call.cwd] = _member_build(call, repo_name, single, root_depends, out)
            depends = members[call.cwd]
            extra: str | None = _member_suffix(call, taken)
        else:
            extra = None if first else _suffix(call, index, taken)
            first = False
        provider = test_provider(
            repo_name,
            single,
            extra,
            partial(script_command, call),
            det.confidence,
            depends_on=depends,
            workdir=call.cwd or None,
            env=call.env,
        )
        where = f"{call.cwd}/package.json" if call.cwd else "package.json"
        out[provider.name] = (provider, f"{where} scripts.{call.script}")
    return out


def _member_build(
    call: scripts.RunnerCall,
    repo_name: str,
    single: bool,
    root_depends: tuple[str, ...],
    out: dict[str, tuple[Provider, str]],
) -> tuple[str, ...]:
    """The member's own pretest build as ``build-<member>`` (after the root's); what its
    tests depend on."""
    if not call.build:
        return root_depends
    name = provider_name("build", repo_name, single, _slug(call.cwd.rsplit("/", 1)[-1]))
    while name in out:
        name = f"{name}-{len(out)}"
    found = _build_step(
        [],
        list(call.build),
        name,
        repo_name,
        workdir=call.cwd,
        depends_on=root_depends,
        single_npm=True,
    )
    if found is None:
        return root_depends
    out[name] = (found[0], f"{call.cwd}/package.json scripts.pre{call.script}")
    return (name,)


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9-]+", "-", text).strip("-").lower() or "member"


def _member_suffix(call: scripts.RunnerCall, taken: set[str]) -> str:
    """`packages/core` → `core`; the whole path when two members share a folder name, and
    the script's suffix when a member runs its runner twice."""
    base = _slug(call.cwd.rsplit("/", 1)[-1])
    if base in taken:
        base = _slug(call.cwd.replace("/", "-"))
    name = base
    if name in taken:
        script = _slug(call.script.split(":", 1)[-1])
        name = f"{base}-{script}"
        count = 2
        while name in taken:
            name, count = f"{base}-{count}", count + 1
    taken.add(name)
    return name


def _suffix(call: scripts.RunnerCall, index: int, taken: set[str]) -> str:
    """`test:edge` → `edge`; a second call of the same script → its position."""
    base = call.script.split(":", 1)[-1] if ":" in call.script else call.script
    base = "".join(ch if ch.isalnum() or ch == "-" else "-" for ch in base).strip("-") or "run"
    name = base if base not in taken and base != "test" else f"{base}-{index + 1}"
    taken.add(name)
    return name


def _build_step(
    steps: list[str],
    raw_steps: list[str],
    name: str,
    repo_name: str,
    *,
    workdir: str | None = None,
    depends_on: tuple[str, ...] = (),
    single_npm: bool = False,
) -> tuple[Provider, str] | None:
    """The `pretest` build (or `npm run build &&` prefix) as one command provider."""
    lines = [f"npm run {shlex.quote(s)}" for s in steps] + raw_steps
    if not lines:
        return None
    if len(steps) == 1 and not raw_steps:
        argv: tuple[str, ...] = ("npm", "run", steps[0])
    elif single_npm and len(lines) == 1 and (words := shlex.split(lines[0]))[:2] == ["npm", "run"]:
        argv = tuple(words)  # a member's `npm run build`, as written
    else:
        argv = ("sh", "-c", " && ".join(lines))
    provider = Provider(
        name=name,
        adapter="command",
        capability=name,
        repository=repo_name,
        command=argv,
        depends_on=depends_on,
        workdir=workdir,
        origin="derived",
        confidence="high",
    )
    return provider, "package.json scripts (the build the test script runs first)"

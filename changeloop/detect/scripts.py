"""How a JavaScript project runs its tests, read from its own package.json scripts.

Derived wiring runs the tests the way the maintainers do (DESIGN §6): the
``test`` script (or ``test:unit``) is followed through ``npm run``/``pnpm``/
``yarn`` calls to each runner invocation (vitest, jest, ``node --test``,
``playwright test``), whose flags and paths are kept (``--config``,
``--typecheck``, ``--env``, test globs). A script that runs the runner twice
(``--env node`` then the edge runtime) gives two calls — one provider each. A
``pretest`` script or a ``npm run build &&`` step becomes a build step the test
providers depend on. Lint, format and typecheck steps are not tests and are left
out. Nothing is executed; scripts are parsed as text.

Example::

    >>> [c.args for c in runner_calls(Path("ms")).calls]
    [('--env', 'node'), ('--env', '@edge-runtime/jest-environment', '--no-coverage')]
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from changeloop.project.manifests import read_json

MAX_DEPTH = 6
_BUILDISH = re.compile(r"build|compile|generate|bundle|prepare|codegen", re.IGNORECASE)
_ENV_ASSIGN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_RUNNERS = {"vitest": "vitest", "jest": "jest", "playwright": "playwright"}


@dataclass(frozen=True)
class RunnerCall:
    """One runner invocation: which runner, its own arguments, from which script."""

    adapter: str  # vitest | jest | node-test | playwright
    args: tuple[str, ...]  # what follows the runner word (node: what follows `node`)
    script: str  # the package.json script it was written in, e.g. "test:unit"


@dataclass
class ScriptPlan:
    calls: list[RunnerCall] = field(default_factory=list)
    steps: list[str] = field(default_factory=list)  # scripts to run first (`npm run <name>`)
    raw_steps: list[str] = field(default_factory=list)  # shell lines of a pre-script


def _scripts(pkg_dir: Path) -> dict[str, str]:
    data = read_json(pkg_dir / "package.json") or {}
    scripts: Any = data.get("scripts")
    if not isinstance(scripts, dict):
        return {}
    return {k: v for k, v in scripts.items() if isinstance(k, str) and isinstance(v, str)}


def test_script(pkg_dir: Path) -> str | None:
    """The script the maintainers run the tests with (`test`, unless a placeholder)."""
    scripts = _scripts(pkg_dir)
    for name in ("test", "test:unit"):
        text = scripts.get(name, "")
        if text.strip() and "no test specified" not in text:
            return name
    return None


def runner_calls(pkg_dir: Path) -> ScriptPlan:
    """Every runner invocation the test script makes, with the build steps before them."""
    scripts = _scripts(pkg_dir)
    plan = ScriptPlan()
    start = test_script(pkg_dir)
    if start is None:
        return plan
    _follow(scripts, start, plan, 0, pre=True)
    return plan


def _follow(scripts: dict[str, str], name: str, plan: ScriptPlan, depth: int, pre: bool) -> None:
    if depth > MAX_DEPTH or name not in scripts:
        return
    if pre and f"pre{name}" in scripts:
        _pre(scripts, f"pre{name}", plan, depth + 1)
    for segment in re.split(r"&&|;|\|\|", scripts[name]):
        _segment(scripts, name, segment, plan, depth)


def _pre(scripts: dict[str, str], name: str, plan: ScriptPlan, depth: int) -> None:
    """A pre-script builds what the tests need: every line of it is a step."""
    for segment in re.split(r"&&|;", scripts[name]):
        words = _words(segment)
        if not words:
            continue
        target = _script_target(words, scripts)
        if target is not None:
            if _calls_runner(scripts, target[0], depth + 1):
                continue  # a test run inside a pre-script is not a build step
            if target[0] not in plan.steps:
                plan.steps.append(target[0])
        elif segment.strip() not in plan.raw_steps:
            plan.raw_steps.append(segment.strip())


def _segment(
    scripts: dict[str, str], name: str, segment: str, plan: ScriptPlan, depth: int
) -> None:
    words = _words(segment)
    if not words:
        return
    call = _runner(words, name)
    if call is not None:
        plan.calls.append(call)
        return
    target = _script_target(words, scripts)
    if target is None:
        return  # a raw command in a test script that runs no runner (lint, rm -rf …)
    script, runs_pre = target
    if _calls_runner(scripts, script, depth + 1):
        _follow(scripts, script, plan, depth + 1, pre=runs_pre)
    elif _BUILDISH.search(script) and script not in plan.steps:
        plan.steps.append(script)


def _calls_runner(scripts: dict[str, str], name: str, depth: int) -> bool:
    if depth > MAX_DEPTH or name not in scripts:
        return False
    for segment in re.split(r"&&|;|\|\|", scripts[name]):
        words = _words(segment)
        if not words:
            continue
        if _runner(words, name) is not None:
            return True
        target = _script_target(words, scripts)
        if target is not None and _calls_runner(scripts, target[0], depth + 1):
            return True
    return False


def _words(segment: str) -> list[str]:
    try:
        words = shlex.split(segment)
    except ValueError:
        words = segment.split()
    while words and _ENV_ASSIGN.match(words[0]):
        words = words[1:]  # FOO=bar vitest …
    if words and words[0] in ("cross-env", "dotenv"):
        words = [w for w in words[1:] if not _ENV_ASSIGN.match(w)]
    return words


def _runner(words: list[str], script: str) -> RunnerCall | None:
    """The runner these words start, after npx/pnpm exec/yarn wrappers."""
    at = 0
    while at < len(words) and words[at] in ("npx", "pnpx", "bunx"):
        at += 1
        while at < len(words) and words[at].startswith("-"):
            at += 1
    if (
        at + 1 < len(words)
        and words[at] in ("pnpm", "yarn", "npm")
        and words[at + 1]
        in (
            "exec",
            "dlx",
        )
    ):
        at += 2
        if at < len(words) and words[at] == "--":
            at += 1
    if at >= len(words):
        return None
    word = words[at].rsplit("/", 1)[-1]
    rest = tuple(words[at + 1 :])
    if word == "node" and "--test" in rest:
        return RunnerCall("node-test", rest, script)
    if word in _RUNNERS:
        if word == "playwright" and (not rest or rest[0] != "test"):
            return None
        return RunnerCall(_RUNNERS[word], rest, script)
    return None


def _script_target(words: list[str], scripts: dict[str, str]) -> tuple[str, bool] | None:
    """(script name, whether its pre-script runs) for `npm run X`, `pnpm X`, `yarn X` …"""
    tool = words[0]
    rest = [w for w in words[1:] if not w.startswith("-")]
    if tool in ("npm", "bun") and rest:
        if rest[0] in ("run", "run-script") and len(rest) > 1:
            return rest[1], tool == "npm"
        if rest[0] in ("test", "t"):
            return "test", tool == "npm"
    if tool in ("pnpm", "yarn") and rest:
        name = rest[1] if rest[0] == "run" and len(rest) > 1 else rest[0]
        if name in scripts:
            return name, tool == "yarn"
    return None


E2E_SCRIPTS = ("test:e2e", "e2e", "test:browser", "test:playwright", "playwright")


def browser_call(pkg_dir: Path) -> RunnerCall | None:
    """The `playwright test` call the test script (or an e2e script) makes, if any."""
    for call in runner_calls(pkg_dir).calls:
        if call.adapter == "playwright":
            return call
    scripts = _scripts(pkg_dir)
    for name in E2E_SCRIPTS:
        if name in scripts:
            plan = ScriptPlan()
            _follow(scripts, name, plan, 0, pre=False)
            found = [c for c in plan.calls if c.adapter == "playwright"]
            if found:
                return found[0]
    return None


def without(args: tuple[str, ...], flags: tuple[str, ...]) -> tuple[str, ...]:
    """``args`` minus the given flags (``--flag value`` and ``--flag=value`` forms)."""
    out: list[str] = []
    skip = False
    for arg in args:
        if skip:
            skip = False
            continue
        name = arg.split("=", 1)[0]
        if name in flags:
            skip = "=" not in arg
            continue
        out.append(arg)
    return tuple(out)

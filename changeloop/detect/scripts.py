"""How a JavaScript project runs its tests, read from its own package.json scripts.

Derived wiring runs the tests the way the maintainers do (docs/bootstrap.md): the
``test`` script (or ``test:unit``) is followed through ``npm run``/``pnpm``/
``yarn`` calls to each runner invocation (vitest, jest, mocha, ``node --test``,
``playwright test``), whose flags and paths are kept (``--config``,
``--typecheck``, ``--env``, test globs). A script that runs the runner twice
(``--env node`` then the edge runtime) gives two calls — one provider each. A
``pretest`` script or a ``npm run build &&`` step becomes a build step the test
providers depend on. Lint, format and typecheck steps are not tests and are left
out. Nothing is executed; scripts are parsed as text.

A script that runs a script in every workspace member (``pnpm -r run test``,
``npm test --workspaces``, ``yarn workspaces foreach run test``, ``lerna run
test``) is followed into each member that has that script: its runner calls
carry the member's folder (``cwd``), where the runner is installed and where its
own config lives, and the member's own ``pretest`` build (``build``).

Example::

    >>> [c.args for c in runner_calls(Path("ms")).calls]
    [('--env', 'node'), ('--env', '@edge-runtime/jest-environment', '--no-coverage')]
    >>> [(c.cwd, c.args) for c in runner_calls(Path("clack")).calls]   # pnpm -r run test
    [('packages/core', ('run',)), ('packages/prompts', ('run',))]
"""

from __future__ import annotations

import fnmatch
import re
import shlex
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from changeloop.project.manifests import read_json

MAX_DEPTH = 6
_BUILDISH = re.compile(r"build|compile|generate|bundle|prepare|codegen", re.IGNORECASE)
_ENV_ASSIGN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_RUNNERS = {"vitest": "vitest", "jest": "jest", "playwright": "playwright", "mocha": "mocha"}
# Runners of unit tests (a Playwright run in `test` is the browser capability's business).
UNIT_RUNNERS = frozenset({"vitest", "jest", "mocha", "node-test"})
# Flags of the package managers' recursive runs that take a value (`--filter x`).
_VALUE_FLAGS = frozenset(
    {
        "--filter",
        "-F",
        "--filter-prod",
        "--workspace-concurrency",
        "--reporter",
        "--dir",
        "-C",
        "--test-pattern",
        "--changed-files-ignore-pattern",
        "--workspace",
        "-w",
        "--include",
        "--exclude",
        "--scope",
        "--ignore",
        "--concurrency",
        "--since",
        "--jobs",
        "-j",
    }
)


@dataclass(frozen=True)
class RunnerCall:
    """One runner invocation: which runner, its own arguments, from which script."""

    adapter: str  # vitest | jest | mocha | node-test | playwright
    args: tuple[str, ...]  # what follows the runner word (node: what follows `node`)
    script: str  # the package.json script it was written in, e.g. "test:unit"
    cwd: str = ""  # the workspace member it runs in, relative to the repository ('' = root)
    build: tuple[str, ...] = ()  # shell lines the member runs first (its own pretest build)
    # variables the script sets for the runner (`FOO=1 vitest`, `cross-env`, pnpm's
    # `--color` → FORCE_COLOR=1): the tests may depend on them (colour snapshots)
    env: tuple[tuple[str, str], ...] = ()


@dataclass
class ScriptPlan:
    calls: list[RunnerCall] = field(default_factory=list)
    steps: list[str] = field(default_factory=list)  # scripts to run first (`npm run <name>`)
    raw_steps: list[str] = field(default_factory=list)  # shell lines of a pre-script
    # where the build steps come from, when not the test script itself (a CI job)
    steps_from: str | None = None


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
    """Every runner invocation the test script makes, with the build steps before them.

    The maintainers' CI counts too: a job that runs a build script (`npm run build`)
    before the test script makes that build a step of the plan, first.
    """
    plan = ScriptPlan()
    start = test_script(pkg_dir)
    if start is None:
        return plan
    reader = _Reader(pkg_dir)
    reader.follow(start, plan, 0, pre=True)
    if plan.calls:
        ci = ci_builds(pkg_dir, reader.scripts)
        if ci is not None:
            evidence, names = ci
            plan.steps[:0] = [n for n in names if n not in plan.steps]
            plan.steps_from = evidence
    return plan


def ci_builds(repo: Path, scripts: dict[str, str]) -> tuple[str, list[str]] | None:
    """(the CI job, the build scripts it runs before the test script), from the first
    GitHub workflow job that runs both."""
    from changeloop.detect.maintainers import workflow_jobs  # noqa: PLC0415 - detect.maintainers pulls in yaml; only CI builds need it

    for evidence, lines in workflow_jobs(repo):
        builds: list[str] = []
        for line in lines:
            for segment in re.split(r"&&|;", line):
                words = _words(segment)
                if not words:
                    continue
                target = _script_target(words, scripts)
                if target is None:
                    continue
                name = target[0]
                if name in ("test", "test:unit"):
                    if builds:
                        return evidence, builds
                    break
                if _BUILDISH.search(name) and name not in builds:
                    builds.append(name)
    return None


@dataclass(frozen=True)
class Recursive:
    """A script run in workspace members: which script, which members, pre-scripts or not."""

    script: str
    members: tuple[str, ...]  # member folders, relative to the repository, in workspace order
    runs_pre: bool  # npm, pnpm and yarn 1 run `pre<script>` first; yarn berry does not
    env: tuple[tuple[str, str], ...] = ()  # what the manager sets for the scripts it runs


class _Reader:
    """The scripts of one package.json (a repository root or a member) and its members."""

    def __init__(self, pkg_dir: Path, root: Path | None = None) -> None:
        self.dir = pkg_dir
        self.root = root or pkg_dir
        self.scripts = _scripts(pkg_dir)
        self._members: list[tuple[str, str]] | None = None  # (folder, package name)

    def members(self) -> list[tuple[str, str]]:
        """The workspace members of this repository (never of a member itself)."""
        if self._members is None:
            from changeloop.detect.javascript import packages  # noqa: PLC0415 - detect.javascript pulls in yaml; only workspace members need it

            self._members = []
            if self.dir == self.root:
                for member in packages(self.root)[1:]:
                    name = (read_json(member / "package.json") or {}).get("name")
                    rel = member.relative_to(self.root).as_posix()
                    self._members.append((rel, name if isinstance(name, str) else rel))
        return self._members

    def follow(self, name: str, plan: ScriptPlan, depth: int, pre: bool) -> None:
        if depth > MAX_DEPTH or name not in self.scripts:
            return
        if pre and f"pre{name}" in self.scripts:
            self._pre(f"pre{name}", plan, depth + 1)
        for segment in re.split(r"&&|;|\|\|", self.scripts[name]):
            self._segment(name, segment, plan, depth)

    def _pre(self, name: str, plan: ScriptPlan, depth: int) -> None:
        """A pre-script builds what the tests need: every line of it is a step."""
        for segment in re.split(r"&&|;", self.scripts[name]):
            words = _words(segment)
            if not words:
                continue
            target = None if self.recursive(words) else _script_target(words, self.scripts)
            if target is not None:
                if self.calls_runner(target[0], depth + 1):
                    continue  # a test run inside a pre-script is not a build step
                if target[0] not in plan.steps:
                    plan.steps.append(target[0])
            elif segment.strip() not in plan.raw_steps:
                plan.raw_steps.append(segment.strip())

    def _segment(self, name: str, segment: str, plan: ScriptPlan, depth: int) -> None:
        env, words = _split(segment)
        if not words:
            return
        call = _runner(words, name)
        if call is not None:
            plan.calls.append(replace(call, env=env) if env else call)
            return
        recursive = self.recursive(words)
        if recursive is not None:
            plan.calls.extend(self.member_calls(recursive, env))
            return
        target = _script_target(words, self.scripts)
        if target is None:
            return  # a raw command in a test script that runs no runner (lint, rm -rf …)
        script, runs_pre = target
        if self.calls_runner(script, depth + 1):
            self.follow(script, plan, depth + 1, pre=runs_pre)
        elif _BUILDISH.search(script) and script not in plan.steps:
            plan.steps.append(script)

    def calls_runner(self, name: str, depth: int) -> bool:
        if depth > MAX_DEPTH or name not in self.scripts:
            return False
        for segment in re.split(r"&&|;|\|\|", self.scripts[name]):
            words = _words(segment)
            if not words:
                continue
            if _runner(words, name) is not None:
                return True
            recursive = self.recursive(words)
            if recursive is not None:
                if self.member_calls(recursive):
                    return True
                continue
            target = _script_target(words, self.scripts)
            if target is not None and self.calls_runner(target[0], depth + 1):
                return True
        return False

    def recursive(self, words: list[str]) -> Recursive | None:
        """The script these words run in every (selected) workspace member, if they do."""
        found = _recursive_script(words)
        if found is None or not self.members():
            return None
        script, filters, runs_pre = found
        chosen = tuple(rel for rel, name in self.members() if _selected(rel, name, filters))
        # pnpm --color makes the scripts it runs colour their output (FORCE_COLOR=1)
        env = (("FORCE_COLOR", "1"),) if words[0] == "pnpm" and "--color" in words else ()
        return Recursive(script, chosen, runs_pre, env)

    def member_calls(
        self, recursive: Recursive, env: tuple[tuple[str, str], ...] = ()
    ) -> list[RunnerCall]:
        """Each member's runner calls for the script, with the member's own build first;
        ``env``: what the recursive run's own line sets, under what each call sets."""
        out: list[RunnerCall] = []
        for rel in recursive.members:
            member = _Reader(self.root / rel, self.root)
            if recursive.script not in member.scripts:
                continue  # `--if-present`, and what every manager skips or fails on
            plan = ScriptPlan()
            member.follow(recursive.script, plan, 1, pre=recursive.runs_pre)
            build = tuple(f"npm run {shlex.quote(s)}" for s in plan.steps) + tuple(plan.raw_steps)
            out.extend(
                RunnerCall(
                    c.adapter,
                    c.args,
                    c.script,
                    cwd=rel,
                    build=build,
                    env=_merged(env, recursive.env, c.env),
                )
                for c in plan.calls
            )
        return out


def _merged(*layers: tuple[tuple[str, str], ...]) -> tuple[tuple[str, str], ...]:
    """Variables of several layers, a later layer's value winning."""
    out: dict[str, str] = {}
    for layer in layers:
        out.update(layer)
    return tuple(out.items())


def _recursive_script(words: list[str]) -> tuple[str, list[str], bool] | None:
    """(script, member filters, runs pre-scripts) of a run in every workspace member."""
    tool, rest = words[0], words[1:]
    if tool == "pnpm":  # pnpm's -w is --workspace-root (no value), not npm's --workspace
        rest = [w for w in rest if w not in ("-w", "--workspace-root")]
    flags = [w for w in rest if w.startswith("-")]
    positional, filters = _positional(rest)
    if tool == "pnpm" and ({"-r", "--recursive"} & set(flags) or (filters and positional)):
        return _named_script(positional), filters, True
    if tool == "npm" and ({"--workspaces", "-ws"} & set(flags) or _has_workspace(rest)):
        return _named_script(positional), filters, True
    if tool == "yarn" and positional[:1] == ["workspaces"]:
        if positional[1:2] == ["run"] and len(positional) > 2:  # yarn 1
            return positional[2], filters, True
        if positional[1:2] == ["foreach"]:  # yarn berry runs no pre-scripts
            return _named_script(positional[2:]), filters, False
    if tool == "lerna" and positional[:1] == ["run"] and len(positional) > 1:
        return positional[1], filters, True
    return None


def _positional(rest: list[str]) -> tuple[list[str], list[str]]:
    """(positional words, member filters) of a package manager's words after the tool."""
    positional: list[str] = []
    filters: list[str] = []
    skip = False
    for i, word in enumerate(rest):
        if skip:
            skip = False
            continue
        name, _, value = word.partition("=")
        if name in _VALUE_FLAGS:
            if not value and i + 1 < len(rest):
                value, skip = rest[i + 1], True
            if (
                name in ("--filter", "-F", "--filter-prod", "--workspace", "-w", "--include")
                or name == "--scope"
            ):
                filters.append(value)
            elif name in ("--exclude", "--ignore"):
                filters.append(f"!{value}")
            continue
        if word.startswith("-"):
            continue
        positional.append(word)
    return positional, filters


def _has_workspace(rest: list[str]) -> bool:
    return any(w in ("-w", "--workspace") or w.startswith("--workspace=") for w in rest)


def _named_script(positional: list[str]) -> str:
    """`run test` / `run-script test` / `test` / `t` → the script's name."""
    if positional[:1] in (["run"], ["run-script"]) and len(positional) > 1:
        return positional[1]
    if positional[:1] in (["t"], ["tst"]):
        return "test"
    return positional[0] if positional else "test"


def _selected(rel: str, name: str, filters: list[str]) -> bool:
    """Whether a member passes the filters (`./packages/*`, `@scope/*`, `!name`)."""
    include = [f for f in filters if not f.startswith("!")]
    exclude = [f[1:] for f in filters if f.startswith("!")]

    def matches(pattern: str) -> bool:
        pattern = pattern.removeprefix("...").removesuffix("...").removesuffix("^...")
        if pattern.startswith(("./", "{./")) or ("/" in pattern and not pattern.startswith("@")):
            path = pattern.strip("{}").removeprefix("./").rstrip("/")
            return fnmatch.fnmatch(rel, path) or fnmatch.fnmatch(rel, f"{path}/*")
        return fnmatch.fnmatch(name, pattern) or fnmatch.fnmatch(rel, pattern)

    if include and not any(matches(p) for p in include):
        return False
    return not any(matches(p) for p in exclude)


def _words(segment: str) -> list[str]:
    return _split(segment)[1]


def _split(segment: str) -> tuple[tuple[tuple[str, str], ...], list[str]]:
    """(variables the segment sets for its command, the command's words)."""
    try:
        words = shlex.split(segment)
    except ValueError:
        words = segment.split()
    env: list[tuple[str, str]] = []
    while words and _ENV_ASSIGN.match(words[0]):
        env.append(_assignment(words.pop(0)))  # FOO=bar vitest …
    if words and words[0] in ("cross-env", "dotenv"):
        env += [_assignment(w) for w in words[1:] if _ENV_ASSIGN.match(w)]
        words = [w for w in words[1:] if not _ENV_ASSIGN.match(w)]
    return tuple(env), words


def _assignment(word: str) -> tuple[str, str]:
    name, _, value = word.partition("=")
    return name, value


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
        if call.adapter == "playwright" and not call.cwd:
            return call
    reader = _Reader(pkg_dir)
    for name in E2E_SCRIPTS:
        if name in reader.scripts:
            plan = ScriptPlan()
            reader.follow(name, plan, 0, pre=False)
            found = [c for c in plan.calls if c.adapter == "playwright" and not c.cwd]
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

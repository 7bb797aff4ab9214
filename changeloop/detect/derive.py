"""Derived wiring: the provider a careful engineer would write for each required capability.

Each derived provider asks its runner for a structured report under
``.changeloop/reports/`` so test-discovery reads counts and claim citations
instead of scraping text. Confidence is ``high`` when the framework came from
configuration or a manifest and ``low`` otherwise; ``evidence init --write``
only writes high-confidence providers. Frameworks already wired in
execution.yaml (detection source ``configured``) are not derived again.
"""

from __future__ import annotations

import dataclasses
import shlex
from collections.abc import Mapping
from pathlib import Path

from changeloop.detect import scripts
from changeloop.detect.manifests import dig, read_ini, read_json, read_toml
from changeloop.detect.types import Detection
from changeloop.environment import DERIVED_PYTHON
from changeloop.model import Confidence, Evidence, Execution, Provider, Repository

REPORT_DIR = ".changeloop/reports"
UNIT_TYPES = ("python", "javascript", "rust")
TEST_CAPABILITIES = ("test", "discovery")


def required(evidence: Evidence, repositories: Mapping[str, Repository]) -> dict[str, list[str]]:
    """capability -> repositories that must pass it (change-level ``requires`` and claims)."""
    every = list(repositories)
    out: dict[str, list[str]] = {}

    def add(capability: str, repos: list[str]) -> None:
        bucket = out.setdefault(capability, [])
        bucket.extend(r for r in repos if r not in bucket)

    for capability, repos in evidence.requires.items():
        add(capability, list(repos) if repos else every)
    for claim in evidence.claims.values():
        for capability in claim.requires:
            add(capability, [claim.repository] if claim.repository else every)
    return out


def _name(base: str, repo: str, single: bool, extra: str | None = None) -> str:
    name = base if single else f"{base}-{repo}"
    return f"{name}-{extra}" if extra else name


def _confidence(det: Detection) -> Confidence:
    return det.confidence


def test_command(det: Detection, repo: Path, report: str) -> tuple[tuple[str, ...], str | None]:
    """(argv, report path or None) running ``det``'s framework with a structured reporter."""
    if det.adapter == "unittest":
        # The runner the maintainers run, never pytest in its place (pytest skips
        # `load_tests`); their own args stay, and -v (last: `discover` must come
        # first when given) lists each test for the reader.
        return (DERIVED_PYTHON, "-m", "unittest", *det.args, "-v"), None
    if det.adapter == "pytest":
        # `python` is resolved when the provider runs (the repository's .venv if it
        # has one then), never frozen here (changeloop/environment.py).
        return (DERIVED_PYTHON, "-m", "pytest", f"--junitxml={report}.xml"), f"{report}.xml"
    if det.adapter == "vitest":
        return (
            ("npx", "vitest", "run", "--reporter=json", f"--outputFile={report}.json"),
            f"{report}.json",
        )
    if det.adapter == "jest":
        return ("npx", "jest", "--json", f"--outputFile={report}.json"), f"{report}.json"
    if det.adapter == "node-test":
        # Node 20 does not expand globs: pass no paths and let node find its test files.
        return (
            (
                "node",
                "--test",
                "--test-reporter=junit",
                f"--test-reporter-destination={report}.xml",
            ),
            f"{report}.xml",
        )
    if det.adapter == "cargo":
        argv = (
            ("cargo", "test", "--workspace")
            if (repo / "Cargo.toml").is_file()
            and dig(read_toml(repo / "Cargo.toml"), "workspace") is not None
            else ("cargo", "test")
        )
        return argv, None  # libtest text on stdout: stable cargo has no structured report
    raise ValueError(det.adapter)


def linters(repo: Path) -> list[tuple[str, tuple[str, ...], str]]:
    """(tool, argv, evidence) for each linter the repository configures."""
    found: list[tuple[str, tuple[str, ...], str]] = []
    pyproject = read_toml(repo / "pyproject.toml")
    interpreter = DERIVED_PYTHON
    if isinstance(dig(pyproject, "tool", "ruff"), dict):
        found.append(
            ("ruff", (interpreter, "-m", "ruff", "check", "."), "pyproject.toml [tool.ruff]")
        )
    else:
        for name in ("ruff.toml", ".ruff.toml"):
            if (repo / name).is_file():
                found.append(("ruff", (interpreter, "-m", "ruff", "check", "."), name))
                break
    mypy_evidence = None
    mypy_files = False  # a configured `files` is what mypy checks; "." would override it
    mypy_table = dig(pyproject, "tool", "mypy")
    if isinstance(mypy_table, dict):
        mypy_evidence = "pyproject.toml [tool.mypy]"
        mypy_files = "files" in mypy_table
    else:
        for name in ("mypy.ini", "setup.cfg"):
            cfg = read_ini(repo / name)
            if cfg is not None and cfg.has_section("mypy"):
                mypy_evidence = f"{name} [mypy]"
                mypy_files = cfg.has_option("mypy", "files")
                break
    if mypy_evidence is not None:
        target: tuple[str, ...] = () if mypy_files else (".",)
        found.append(("mypy", (interpreter, "-m", "mypy", *target), mypy_evidence))
    package = read_json(repo / "package.json")
    scripts = package.get("scripts") if package else None
    if isinstance(scripts, dict):
        for script in ("lint", "check"):
            if isinstance(scripts.get(script), str):
                found.append((script, ("npm", "run", script), f"package.json scripts.{script}"))
                break
    return found


def clippy(repo: Path) -> tuple[tuple[str, ...], str, Confidence] | None:
    """``cargo clippy`` for a Rust repository: high confidence only when clippy is configured."""
    cargo = read_toml(repo / "Cargo.toml")
    if cargo is None:
        return None
    argv = ("cargo", "clippy", "--all-targets", "--", "-D", "warnings")
    for name in ("clippy.toml", ".clippy.toml"):
        if (repo / name).is_file():
            return argv, name, "high"
    if dig(cargo, "lints", "clippy") is not None or dig(cargo, "workspace", "lints", "clippy"):
        return argv, "Cargo.toml [lints.clippy]", "high"
    return argv, "Cargo.toml (static-analysis requested)", "low"


def derive_explained(
    evidence: Evidence,
    repositories: Mapping[str, Repository],
    detections: Mapping[str, list[Detection]],
) -> dict[str, tuple[Provider, str]]:
    """Derived providers by name for every capability the change requires, each with the
    evidence (file and key) behind it."""
    needs = required(evidence, repositories)
    single = len(repositories) == 1
    out: dict[str, tuple[Provider, str]] = {}
    for repo_name, repo in repositories.items():
        dets = [d for d in detections.get(repo_name, []) if d.detection_source != "configured"]
        configured_types = {
            d.test_type for d in detections.get(repo_name, []) if d.detection_source == "configured"
        }
        wants_tests = any(repo_name in needs.get(c, []) for c in TEST_CAPABILITIES)
        if wants_tests and not configured_types.intersection(UNIT_TYPES):
            first = True
            js = next((d for d in dets if d.test_type == "javascript"), None)
            from_scripts = _from_scripts(js, repo_name, repo.path, single) if js else {}
            out.update(from_scripts)
            first = not from_scripts
            for det in (d for d in dets if d.test_type in UNIT_TYPES):
                if det is js and from_scripts:
                    continue
                extra = None if first else det.adapter
                name = _name("test", repo_name, single, extra)
                report_stem = f"{REPORT_DIR}/{name}"
                argv, report = test_command(det, repo.path, report_stem)
                discovery = (
                    None if single and first else _name("discovery", repo_name, single, extra)
                )
                out[name] = (
                    Provider(
                        name=name,
                        adapter="test-discovery",
                        capability="test",
                        repository=repo_name,
                        command=argv,
                        report=report,
                        format="unittest" if det.adapter == "unittest" else None,
                        discovery_provider=discovery,
                        origin="derived",
                        confidence=_confidence(det),
                    ),
                    det.evidence,
                )
                first = False
        wants_browser = any(repo_name in needs.get(c, []) for c in ("browser", "accessibility"))
        browser = next((d for d in dets if d.test_type == "browser"), None)
        if wants_browser and browser is not None and "browser" not in configured_types:
            name = _name("browser", repo_name, single)
            report = f"{REPORT_DIR}/{name}.json"
            outputs = ("accessibility",) if repo_name in needs.get("accessibility", []) else ()
            out[name] = (
                Provider(
                    name=name,
                    adapter="playwright",
                    capability="browser",
                    repository=repo_name,
                    command=_playwright_command(repo.path),
                    report=report,
                    env={"PLAYWRIGHT_JSON_OUTPUT_NAME": report},
                    outputs=outputs,
                    origin="derived",
                    confidence=_confidence(browser),
                ),
                browser.evidence,
            )
        if repo_name in needs.get("static-analysis", []):
            out.update(_static(repo_name, repo.path, single))
    return out


# The files :func:`linters` and :func:`clippy` read, at a repository's top level: what a
# derived static-analysis provider depends on (keep the three together).
STATIC_ANALYSIS_FILES = (
    "pyproject.toml",
    "ruff.toml",
    ".ruff.toml",
    "mypy.ini",
    "setup.cfg",
    "package.json",
    "Cargo.toml",
    "clippy.toml",
    ".clippy.toml",
)


def static_analysis_files(evidence: Evidence, repositories: Mapping[str, Repository]) -> list[Path]:
    """Every file whose bytes decide the derived static-analysis providers of the change."""
    needs = required(evidence, repositories)
    return [
        repositories[repo].path / name
        for repo in needs.get("static-analysis", [])
        if repo in repositories
        for name in STATIC_ANALYSIS_FILES
    ]


def derivation_possible(
    evidence: Evidence,
    execution: Execution | None,
    repositories: Mapping[str, Repository],
    *,
    static_analysis: bool = True,
) -> bool:
    """Whether :func:`derive_explained` could derive anything here, whatever detection finds.

    Mirrors its conditions (keep the two together): tests for a repository with no
    configured unit runner, a browser capability with no configured browser runner,
    static analysis. When False, ``prove`` skips detection (a walk of the tree) and
    the no-change record may key the plan on its configuration alone.
    """
    from changeloop.detect import configured_detection, configured_for

    needs = required(evidence, repositories)
    if static_analysis and needs.get("static-analysis"):
        return True  # ``static_analysis=False``: the caller observes STATIC_ANALYSIS_FILES
    single = len(repositories) == 1
    for repo in repositories:
        types = {
            found.test_type
            for p in configured_for(execution, repo, single)
            if (found := configured_detection(p)) is not None
        }
        if any(repo in needs.get(c, []) for c in TEST_CAPABILITIES) and not types & set(UNIT_TYPES):
            return True
        if any(repo in needs.get(c, []) for c in ("browser", "accessibility")) and (
            "browser" not in types
        ):
            return True
    return False


def _playwright_command(path: Path) -> tuple[str, ...]:
    """`npx playwright test` with the maintainers' own arguments (`--config …`), if a script
    runs it; the adapter adds its JSON reporter (an existing `--reporter` is dropped)."""
    call = scripts.browser_call(path)
    if call is None:
        return ("npx", "playwright", "test")
    args = scripts.without(call.args[1:], ("--reporter",))
    args = tuple(a for a in args if a not in ("--ui", "--debug", "--headed"))
    return ("npx", "playwright", "test", *args)


_REPORT_FLAGS = {
    "vitest": ("--reporter", "--outputFile", "--watch", "-w"),
    "jest": ("--json", "--outputFile", "--watch", "--watchAll"),
    "node-test": ("--test-reporter", "--test-reporter-destination", "--watch"),
}


def script_command(call: scripts.RunnerCall, report: str) -> tuple[tuple[str, ...], str]:
    """The maintainers' runner call with changeloop's structured reporter added."""
    args = scripts.without(call.args, _REPORT_FLAGS.get(call.adapter, ()))
    if call.adapter == "vitest":
        run = args if args[:1] == ("run",) else ("run", *args)
        argv = ("npx", "vitest", *run, "--reporter=json", f"--outputFile={report}.json")
        return argv, f"{report}.json"
    if call.adapter == "jest":
        return ("npx", "jest", *args, "--json", f"--outputFile={report}.json"), f"{report}.json"
    # node --test: the reporter right after --test, everything else in the maintainers'
    # order (a flag's value stays beside it; globs are expanded when it runs)
    at = args.index("--test") + 1 if "--test" in args else 0
    reporter = ("--test-reporter=junit", f"--test-reporter-destination={report}.xml")
    return ("node", *args[:at], *reporter, *args[at:]), f"{report}.xml"


def _from_scripts(
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
        name = _name("test", repo_name, single, extra)
        argv, report = script_command(call, f"{REPORT_DIR}/{name}")
        discovery = None if single and index == 0 else _name("discovery", repo_name, single, extra)
        out[name] = (
            Provider(
                name=name,
                adapter="test-discovery",
                capability="test",
                repository=repo_name,
                command=argv,
                report=report,
                discovery_provider=discovery,
                depends_on=depends,
                origin="derived",
                confidence=det.confidence,
            ),
            f"package.json scripts.{call.script}",
        )
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
    name = _name("build", repo_name, single)
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


def _static(repo_name: str, path: Path, single: bool) -> dict[str, tuple[Provider, str]]:
    out: dict[str, tuple[Provider, str]] = {}
    tools: list[tuple[str, tuple[str, ...], Confidence, str]] = [
        (tool, argv, "high", where) for tool, argv, where in linters(path)
    ]
    if not tools and (found := clippy(path)) is not None:
        tools.append(("clippy", found[0], found[2], found[1]))
    for index, (tool, argv, confidence, where) in enumerate(tools):
        name = _name("static-analysis", repo_name, single, None if index == 0 else tool)
        out[name] = (
            Provider(
                name=name,
                adapter="command",
                capability="static-analysis",
                repository=repo_name,
                command=argv,
                origin="derived",
                confidence=confidence,
            ),
            where,
        )
    return out


__all__ = ["derive_explained", "required", "test_command"]


def attach_services(
    derived: Mapping[str, tuple[Provider, str]],
    execution: Execution | None,
    repositories: Mapping[str, Repository],
) -> dict[str, tuple[Provider, str]]:
    """Give derived Playwright providers the services declared for their repository.

    Services cannot be derived (reading a JS config's ``webServer`` would mean running
    it), but a service the user declared for the same repository is what the
    browser tests need; without it they would run against nothing.
    """
    if execution is None or not execution.services:
        return dict(derived)
    only = next(iter(repositories)) if len(repositories) == 1 else None
    out: dict[str, tuple[Provider, str]] = {}
    for name, (found, why) in derived.items():
        provider = found
        if provider.adapter == "playwright" and not provider.services:
            names = tuple(
                s.name
                for s in execution.services.values()
                if (s.repository or only) == provider.repository
            )
            if names:
                provider = dataclasses.replace(provider, services=names)
        out[name] = (provider, why)
    return out

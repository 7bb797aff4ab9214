"""Derived wiring: the provider a careful engineer would write, named by capability."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from bootstrap_helpers import CHANGE, venv_with, workspace, write

from changeloop.detect.context import derived_for, load_context
from changeloop.model import Provider
from changeloop.plan import build_plan
from changeloop.workspace.discovery import find_change


def derived(root: Path) -> dict[str, Provider]:
    return derived_for(root, find_change(root, CHANGE))


def test_single_repository_pytest_with_repo_venv(tmp_path: Path) -> None:
    root = workspace(tmp_path, {"pytest.ini": "[pytest]\n"})
    venv_with(root, "pytest", "8.3.2")
    write(root, {".venv/bin/python": "#!/bin/sh\n"})
    [(name, p)] = derived(root).items()
    assert name == "test" and p.adapter == "test-discovery" and p.capability == "test"
    # derived `python` is resolved to .venv/bin/python when it runs, not frozen here
    assert p.command == ("python", "-m", "pytest", "--junitxml=.changeloop/reports/test.xml")
    assert p.report == ".changeloop/reports/test.xml"
    assert (p.origin, p.confidence, p.repository, p.discovery_provider) == (
        "derived",
        "high",
        "self",
        None,
    )


@pytest.mark.parametrize(
    ("package", "command"),
    [
        (
            '{"scripts": {"test": "node --test"}, "devDependencies": {"jest": "30.0.0"}}',
            (
                "node",
                "--test",
                "--test-reporter=junit",
                "--test-reporter-destination=.changeloop/reports/test.xml",
            ),
        ),
        (
            '{"devDependencies": {"jest": "30.0.0"}}',
            ("npx", "jest", "--json", "--outputFile=.changeloop/reports/test.json"),
        ),
    ],
)
def test_runner_commands_use_structured_reporters(
    tmp_path: Path, package: str, command: tuple[str, ...]
) -> None:
    root = workspace(tmp_path, {"package.json": package})
    assert {n: p.command for n, p in derived(root).items()} == {"test": command}


def test_environment_only_is_low_confidence(tmp_path: Path) -> None:
    root = workspace(tmp_path, {"node_modules/.bin/vitest": "#!/bin/sh\n"})
    [p] = derived(root).values()
    assert p.confidence == "low"
    assert p.command == (
        "npx",
        "vitest",
        "run",
        "--reporter=json",
        "--outputFile=.changeloop/reports/test.json",
    )


def test_several_repositories_are_named_per_repository(tmp_path: Path) -> None:
    root = workspace(
        tmp_path,
        {
            "web/package.json": '{"devDependencies": {"vitest": "3.2.4"}}',
            "api/Cargo.toml": '[workspace]\nmembers = ["crates/*"]\n',
            "api/crates/a/Cargo.toml": '[package]\nname = "a"\nversion = "0.1.0"\n',
        },
        evidence="version: 3\nrepositories: {web: web, api: api}\nrequires: [test]\n",
    )
    got = {n: (p.repository, p.discovery_provider, p.command) for n, p in derived(root).items()}
    assert got == {
        "test-web": (
            "web",
            "discovery-web",
            (
                "npx",
                "vitest",
                "run",
                "--reporter=json",
                "--outputFile=.changeloop/reports/test-web.json",
            ),
        ),
        "test-api": ("api", "discovery-api", ("cargo", "test", "--workspace", "--no-fail-fast")),
    }


def test_static_analysis_from_configured_linters_only(tmp_path: Path) -> None:
    root = workspace(
        tmp_path,
        {
            "pyproject.toml": "[tool.ruff]\nline-length = 100\n[tool.mypy]\nstrict = true\n",
        },
        evidence="version: 3\nrequires: [static-analysis]\n",
    )
    got = {n: (p.adapter, p.capability, p.command) for n, p in derived(root).items()}
    assert got == {
        "static-analysis": ("command", "static-analysis", ("python", "-m", "ruff", "check", ".")),
        "static-analysis-mypy": ("command", "static-analysis", ("python", "-m", "mypy", ".")),
    }


def test_no_linter_means_nothing_derived(tmp_path: Path) -> None:
    root = workspace(
        tmp_path,
        {"pyproject.toml": '[project]\nname = "x"\n'},
        evidence="version: 3\nrequires: [static-analysis]\n",
    )
    assert derived(root) == {}


def test_browser_claims_get_playwright_with_outputs_and_declared_services(tmp_path: Path) -> None:
    root = workspace(
        tmp_path,
        {"package.json": '{"devDependencies": {"@playwright/test": "1.65.1"}}'},
        evidence="version: 3\nclaims:\n  c:\n    requires: [browser, accessibility]\n",
        execution="version: 1\nservices:\n  web:\n    command: [python3, -m, http.server, '4173']\n"
        "    readiness: {url: 'http://127.0.0.1:4173/', expect: {body: x}}\n",
    )
    [(name, p)] = derived(root).items()
    assert (name, p.adapter, p.capability, p.outputs, p.services) == (
        "browser",
        "playwright",
        "browser",
        ("accessibility",),
        ("web",),
    )
    assert p.command == ("npx", "playwright", "test")
    assert p.report == ".changeloop/reports/browser.json"


def test_nothing_required_nothing_derived(tmp_path: Path) -> None:
    root = workspace(tmp_path, {"pytest.ini": "[pytest]\n"}, evidence="version: 3\n")
    assert derived(root) == {}


def test_configured_framework_is_not_derived_again(tmp_path: Path) -> None:
    root = workspace(
        tmp_path,
        {"pytest.ini": "[pytest]\n"},
        execution="version: 1\nproviders:\n  unit:\n    adapter: test-discovery\n"
        "    command: [pytest, -q]\n",
    )
    assert derived(root) == {}


def test_derived_providers_go_through_build_plan(tmp_path: Path) -> None:
    root = workspace(tmp_path, {"pytest.ini": "[pytest]\n"})
    change = find_change(root, CHANGE)
    plan = build_plan(root, change, derived=derived_for(root, change))
    assert plan.providers["test"].origin == "derived"
    assert plan.providers["test"].resources == ("workspace-read:self",)
    assert load_context(root, change).detections["self"][0].adapter == "pytest"


_OPENED: list[list[str]] = []  # while a test listens: one list of the paths opened


def _audit(event: str, args: tuple[object, ...]) -> None:
    if _OPENED and event == "open" and isinstance(args[0], (str, Path)):
        _OPENED[-1].append(str(args[0]))


def test_static_analysis_derivation_reads_only_the_files_the_no_change_record_observes(
    tmp_path: Path,
) -> None:
    # The no-change record keys a change that requires static analysis on the digests of
    # STATIC_ANALYSIS_FILES; a file linters() or clippy() opened beyond them would let a
    # record answer for a plan derivation has since changed.
    from changeloop.detect.static_analysis import STATIC_ANALYSIS_FILES, clippy, linters

    files = {
        "pyproject.toml": "[tool.ruff]\n[tool.mypy]\n",
        "ruff.toml": "",
        ".ruff.toml": "",
        "mypy.ini": "[mypy]\n",
        "setup.cfg": "[mypy]\n",
        "package.json": '{"scripts": {"lint": "eslint ."}}',
        "Cargo.toml": "[package]\nname = 'x'\n[lints.clippy]\n",
        "clippy.toml": "",
        ".clippy.toml": "",
        "README.md": "r\n",
    }
    # each layout takes another branch (pyproject first, then ruff.toml/mypy.ini, then
    # setup.cfg, then .ruff.toml and .clippy.toml), so every read is seen once
    layouts = [
        set(files),
        set(files) - {"pyproject.toml", "clippy.toml"},
        set(files) - {"pyproject.toml", "ruff.toml", "mypy.ini", "clippy.toml"},
    ]
    opened: list[str] = []
    sys.addaudithook(_audit)  # for the rest of the process; it listens only here
    for index, names in enumerate(layouts):
        where = tmp_path / str(index)
        where.mkdir()
        for name in names:
            (where / name).write_text(files[name])
        _OPENED.append([])
        try:
            assert linters(where) and clippy(where) is not None
        finally:
            opened += _OPENED.pop()
    read = {Path(p).name for p in opened}  # the *.toml linters' own files are only stat'ed
    assert read == {"pyproject.toml", "mypy.ini", "setup.cfg", "package.json", "Cargo.toml"}
    assert read <= set(STATIC_ANALYSIS_FILES)

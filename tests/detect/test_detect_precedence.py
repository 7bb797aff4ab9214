"""Detection precedence: configured > manifest > environment > source import, per test type."""

from __future__ import annotations

from pathlib import Path

import pytest
from bootstrap_helpers import venv_with, write

from changeloop.detect.repository import detect_repository
from changeloop.model import Provider

PYPROJECT_INI = '[project]\nname = "x"\n[tool.pytest.ini_options]\ntestpaths = ["tests"]\n'
TEST_IMPORT = "import pytest\n\ndef test_x():\n    assert True\n"


def one(path: Path) -> list[tuple[str, str, str, str | None, str]]:
    return [
        (d.adapter, d.test_type, d.detection_source, d.version, d.evidence)
        for d in detect_repository(path)
    ]


def test_nothing_at_all_selects_nothing(tmp_path: Path) -> None:
    write(tmp_path, {"README.md": "hello\n", "src/app.py": "print('hi')\n"})
    assert detect_repository(tmp_path) == []


def test_manifest_only(tmp_path: Path) -> None:
    write(tmp_path, {"pyproject.toml": PYPROJECT_INI})
    assert one(tmp_path) == [
        ("pytest", "python", "manifest", None, "pyproject.toml [tool.pytest.ini_options]")
    ]


def test_environment_only_reads_the_repository_venv(tmp_path: Path) -> None:
    venv_with(tmp_path, "pytest", "8.3.2")
    [(adapter, _, source, version, evidence)] = one(tmp_path)
    assert (adapter, source, version) == ("pytest", "environment", "8.3.2")
    assert evidence.startswith(".venv/lib/python3.11/site-packages")


def test_source_import_only(tmp_path: Path) -> None:
    write(tmp_path, {"tests/test_a.py": TEST_IMPORT})
    assert one(tmp_path) == [("pytest", "python", "source_import", None, "tests/test_a.py import")]


def test_manifest_beats_environment_and_takes_installed_version(tmp_path: Path) -> None:
    write(tmp_path, {"pyproject.toml": PYPROJECT_INI})
    venv_with(tmp_path, "pytest", "8.3.2")
    assert one(tmp_path) == [
        ("pytest", "python", "manifest", "8.3.2", "pyproject.toml [tool.pytest.ini_options]")
    ]


def test_environment_beats_source_import(tmp_path: Path) -> None:
    write(tmp_path, {"tests/test_a.py": TEST_IMPORT})
    venv_with(tmp_path, "pytest", "7.4.0")
    assert [d.detection_source for d in detect_repository(tmp_path)] == ["environment"]


def test_manifest_beats_source_import(tmp_path: Path) -> None:
    write(tmp_path, {"tests/test_a.py": TEST_IMPORT, "pytest.ini": "[pytest]\n"})
    assert one(tmp_path) == [("pytest", "python", "manifest", None, "pytest.ini [pytest]")]


def test_configured_beats_manifest_and_keeps_its_version(tmp_path: Path) -> None:
    write(tmp_path, {"pyproject.toml": PYPROJECT_INI})
    venv_with(tmp_path, "pytest", "8.3.2")
    unit = Provider(
        name="unit",
        adapter="test-discovery",
        capability="test",
        command=("python", "-m", "pytest", "-q"),
    )
    assert one_cfg(tmp_path, unit) == [
        ("pytest", "python", "configured", "8.3.2", "execution.yaml providers.unit")
    ]


def one_cfg(path: Path, provider: Provider) -> list[tuple[str, str, str, str | None, str]]:
    return [
        (d.adapter, d.test_type, d.detection_source, d.version, d.evidence)
        for d in detect_repository(path, [provider])
    ]


def test_configured_vitest_beats_environment_jest(tmp_path: Path) -> None:
    write(tmp_path, {"node_modules/.bin/jest": "#!/bin/sh\n"})
    cfg = Provider(
        name="test", adapter="test-discovery", capability="test", command=("npx", "vitest", "run")
    )
    assert [(d.adapter, d.detection_source) for d in detect_repository(tmp_path, [cfg])] == [
        ("vitest", "configured")
    ]


@pytest.mark.parametrize(
    ("files", "evidence", "version"),
    [
        (
            {
                "pyproject.toml": '[project]\nname="x"\n[project.optional-dependencies]\n'
                'test = ["pytest==8.3.2", "hypothesis"]\n'
            },
            "pyproject.toml [project.optional-dependencies] test",
            "8.3.2",
        ),
        (
            {"pyproject.toml": '[dependency-groups]\ndev = ["pytest>=8"]\n'},
            "pyproject.toml [dependency-groups] dev",
            None,
        ),
        (
            {
                "pyproject.toml": '[tool.poetry.group.dev.dependencies]\npytest = "^8.0"\n',
                "poetry.lock": '[[package]]\nname = "pytest"\nversion = "8.1.1"\n',
            },
            "pyproject.toml [tool.poetry.group.dev.dependencies] pytest",
            "8.1.1",
        ),
        (
            {"requirements-dev.txt": "# tools\npytest==7.4.4 ; python_version > '3'\n"},
            "requirements-dev.txt pytest",
            "7.4.4",
        ),
        (
            {"setup.cfg": "[metadata]\nname = x\n[tool:pytest]\naddopts = -q\n"},
            "setup.cfg [tool:pytest]",
            None,
        ),
        (
            {"tox.ini": "[tox]\nenvlist = py311\n[pytest]\nminversion = 7\n"},
            "tox.ini [pytest]",
            None,
        ),
        (
            {
                "pyproject.toml": '[dependency-groups]\ndev = ["pytest"]\n',
                "uv.lock": 'version = 1\n[[package]]\nname = "pytest"\nversion = "8.3.5"\n',
            },
            "pyproject.toml [dependency-groups] dev",
            "8.3.5",
        ),
    ],
)
def test_python_manifests(
    tmp_path: Path, files: dict[str, str], evidence: str, version: str | None
) -> None:
    write(tmp_path, files)
    assert one(tmp_path) == [("pytest", "python", "manifest", version, evidence)]


def test_a_dependency_that_merely_contains_pytest_is_not_pytest(tmp_path: Path) -> None:
    write(tmp_path, {"requirements.txt": "pytest-cov==5.0\npytest_asyncio\n"})
    assert detect_repository(tmp_path) == []


def test_vitest_version_from_package_lock(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "package.json": '{"name": "w", "devDependencies": {"vitest": "^2.1.0"}}',
            "package-lock.json": '{"packages": {"node_modules/vitest": {"version": "2.1.9"}}}',
        },
    )
    assert one(tmp_path) == [
        ("vitest", "javascript", "manifest", "2.1.9", "package.json devDependencies.vitest")
    ]


def test_jest_from_node_modules_bin_with_installed_version(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "node_modules/.bin/jest": "#!/bin/sh\nexit 1\n",
            "node_modules/jest/package.json": '{"name": "jest", "version": "30.0.5"}',
        },
    )
    assert one(tmp_path) == [
        ("jest", "javascript", "environment", "30.0.5", "node_modules/.bin/jest")
    ]


def test_node_test_script(tmp_path: Path) -> None:
    write(tmp_path, {"package.json": '{"scripts": {"test": "node --test"}}'})
    assert one(tmp_path) == [
        ("node-test", "javascript", "manifest", None, "package.json scripts.test")
    ]


def test_script_named_runner_wins_over_other_dependency(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "package.json": '{"scripts": {"test": "jest --ci"},'
            ' "devDependencies": {"vitest": "1.0.0", "jest": "29.7.0"}}'
        },
    )
    assert [(d.adapter, d.evidence) for d in detect_repository(tmp_path)] == [
        ("jest", "package.json devDependencies.jest")
    ]


def test_vitest_import_is_source_import(tmp_path: Path) -> None:
    write(tmp_path, {"src/sum.test.ts": "import { test } from 'vitest'\ntest('x', () => {})\n"})
    assert one(tmp_path) == [
        ("vitest", "javascript", "source_import", None, "src/sum.test.ts import")
    ]


def test_python_and_typescript_never_conflict(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "pyproject.toml": PYPROJECT_INI,
            "package.json": '{"devDependencies": {"vitest": "3.2.4", "typescript": "5.6.0",'
            ' "@playwright/test": "1.65.1"}}',
            "web/app.test.ts": "import { test } from 'vitest'\n",
        },
    )
    assert [
        (d.test_type, d.adapter, d.detection_source, d.version) for d in detect_repository(tmp_path)
    ] == [
        ("python", "pytest", "manifest", None),
        ("javascript", "vitest", "manifest", "3.2.4"),
        ("browser", "playwright", "manifest", "1.65.1"),
    ]


def test_npm_workspace_members_are_followed(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "package.json": '{"private": true, "workspaces": ["packages/*"]}',
            "packages/core/package.json": '{"name": "core", "devDependencies": {"vitest": "^3"}}',
            "packages/ui/package.json": '{"name": "ui"}',
            "package-lock.json": '{"packages": {"node_modules/vitest": {"version": "3.2.4"}}}',
        },
    )
    assert one(tmp_path) == [
        (
            "vitest",
            "javascript",
            "manifest",
            "3.2.4",
            "packages/core/package.json devDependencies.vitest",
        )
    ]


def test_pnpm_workspace_members_are_followed(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "package.json": '{"private": true}',
            "pnpm-workspace.yaml": "packages:\n  - 'apps/*'\n",
            "apps/site/package.json": '{"devDependencies": {"@playwright/test": "1.65.1"}}',
        },
    )
    assert one(tmp_path) == [
        (
            "playwright",
            "browser",
            "manifest",
            "1.65.1",
            "apps/site/package.json devDependencies.@playwright/test",
        )
    ]


def test_cargo_workspace_members_are_followed(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "Cargo.toml": '[workspace]\nmembers = ["crates/*"]\nresolver = "2"\n',
            "crates/a/Cargo.toml": '[package]\nname = "a"\nversion = "0.1.0"\n',
            "crates/b/Cargo.toml": '[package]\nname = "b"\nversion = "0.1.0"\n',
            "rust-toolchain.toml": '[toolchain]\nchannel = "1.95.0"\n',
        },
    )
    assert one(tmp_path) == [
        (
            "cargo",
            "rust",
            "manifest",
            "1.95.0",
            "Cargo.toml [workspace] members (crates/a, crates/b)",
        )
    ]


def test_broken_manifests_are_treated_as_absent(tmp_path: Path) -> None:
    write(tmp_path, {"pyproject.toml": "[tool.pytest.ini_options\n", "package.json": "{nope"})
    assert detect_repository(tmp_path) == []


def test_nested_projects_are_not_scanned_for_imports(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "examples/demo/pyproject.toml": '[project]\nname="d"\n',
            "examples/demo/tests/test_d.py": TEST_IMPORT,
        },
    )
    assert detect_repository(tmp_path) == []

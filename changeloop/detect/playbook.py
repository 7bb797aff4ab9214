"""What to run next for a capability nothing provides: one pasteable command per case.

Each command ends by re-running ``evidence init --write`` so the newly declared
framework is wired at once. Nothing here is run by changeloop: bootstrap never
installs a dependency; it tells the user what would.
"""

from __future__ import annotations

import shlex
from pathlib import Path

from changeloop.model import Repository
from changeloop.project.manifests import read_toml

ESLINT = "npm i -D eslint && npm pkg set scripts.lint='eslint .'"


def _in(repo: Repository, command: str) -> str:
    return (
        command if repo.relpath in (".", "") else f"(cd {shlex.quote(repo.relpath)} && {command})"
    )


def init_command(change: str) -> str:
    return f"changeloop evidence init {shlex.quote(change)} --write"


def suggest(capability: str, repo: Repository, change: str, change_dir: str) -> tuple[str, str]:
    """(suggested_action, playbook_command) for ``capability`` missing in ``repo``."""
    then = init_command(change)
    edit = f"${{EDITOR:-vi}} {shlex.quote(change_dir + '/execution.yaml')}"
    js = (repo.path / "package.json").is_file()
    pyproject = read_toml(repo.path / "pyproject.toml")
    if capability in ("test", "discovery"):
        script = _npm_test_script(repo)
        if script is not None:
            # The project already has a test command, run by a runner changeloop
            # does not read: keep it (its exit code proves `test`), don't replace it.
            return (
                f"{repo.name}'s `npm test` runs `{script}`, whose report changeloop cannot "
                "read; wire `test` as a command provider running `npm test` (exit code only, "
                "no discovery receipt), or move the tests to vitest/jest/node --test",
                edit,
            )
        if js:
            return (
                f"install a test runner in {repo.name} (vitest) and wire it",
                f"{_in(repo, 'npm i -D vitest')} && {then}",
            )
        # Never edit the project's own configuration to fit changeloop: name the
        # command its maintainers run in execution.yaml (changeloop's own file).
        return (
            f"no test runner is declared for {repo.name}: add a test-discovery provider to "
            "execution.yaml running the tests the way the project runs them, e.g. "
            "`command: [python3, -m, unittest, -v]` with `format: unittest`, or "
            "`command: [python3, -m, pytest, --junitxml=.changeloop/reports/test.xml]` with "
            "`report: .changeloop/reports/test.xml`",
            edit,
        )
    if capability in ("browser", "accessibility"):
        return (
            f"install @playwright/test in {repo.name}, add a playwright.config and wire it",
            f"{_in(repo, 'npm i -D @playwright/test')} && {then}",
        )
    if capability == "static-analysis":
        if pyproject is not None:
            add = "printf '\\n[tool.ruff]\\n' >> pyproject.toml"
            return (
                f"configure ruff in {repo.name}'s pyproject.toml and wire it",
                f"{_in(repo, add)} && {then}",
            )
        if js:
            return (
                f"add a lint script to {repo.name}'s package.json and wire it",
                f"{_in(repo, ESLINT)} && {then}",
            )
        return (
            f"name the linter {repo.name} uses as a command provider in execution.yaml",
            edit,
        )
    if capability == "cross-repo-contract":
        return (
            "add a contract-digest provider naming the contract file in each repository",
            edit,
        )
    if capability == "review":
        return (
            "add an external provider naming the reviewer's or CI's public key",
            f"changeloop keygen --out ci-keys && {edit}",
        )
    return (
        f"wire a command provider for '{capability}' (envelope: true for custom runners)",
        edit,
    )


def change_dir(root: Path, change_path: Path) -> str:
    try:
        return change_path.relative_to(root).as_posix()
    except ValueError:
        return change_path.as_posix()


def _npm_test_script(repo: Repository) -> str | None:
    """package.json's own `test` script, unless it is npm's placeholder."""
    from changeloop.project.manifests import read_json

    package = read_json(repo.path / "package.json")
    scripts = package.get("scripts") if isinstance(package, dict) else None
    script = scripts.get("test") if isinstance(scripts, dict) else None
    if not isinstance(script, str) or not script.strip() or "no test specified" in script:
        return None
    return script.strip()

"""Which install command doctor prints for a Node repository (detect/doctor/node.py).

The command is pasted as printed, so it must be the lock file's own package
manager, and run through npx at the pinned version when that manager is not on PATH.
PATH here is a real directory holding (or not) an executable of that name.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from changeloop.detect.doctor.node import (
    manager_hint,
    needs_node_modules,
    node_install,
    package_manager,
)


@pytest.fixture
def path_with(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty PATH directory; tests put the tools they want found into it."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    monkeypatch.setenv("PATH", str(bin_dir))
    return bin_dir


def _tool(bin_dir: Path, name: str) -> None:
    exe = bin_dir / name
    exe.write_text("#!/bin/sh\nexit 0\n")
    exe.chmod(0o755)


def _repo(tmp_path: Path, files: dict[str, str]) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    for name, text in files.items():
        (repo / name).write_text(text)
    return repo


def test_each_lock_file_names_its_own_frozen_install(tmp_path: Path, path_with: Path) -> None:
    for tool in ("npm", "pnpm", "yarn", "bun"):
        _tool(path_with, tool)
    cases = {
        "package-lock.json": "npm ci",
        "pnpm-lock.yaml": "pnpm install --frozen-lockfile",
        "yarn.lock": "yarn install --frozen-lockfile",
        "bun.lock": "bun install --frozen-lockfile",
        "bun.lockb": "bun install --frozen-lockfile",
    }
    for i, (lock, expected) in enumerate(cases.items()):
        repo = tmp_path / f"r{i}"
        repo.mkdir()
        (repo / lock).write_text("")
        assert node_install(repo, "vitest") == expected, lock
    bare = tmp_path / "bare"
    bare.mkdir()
    assert node_install(bare, "vitest") == "npm i -D vitest"  # no lock file: add the one tool


def test_a_missing_manager_runs_through_npx_at_the_pinned_version(
    tmp_path: Path, path_with: Path
) -> None:
    pinned = {"packageManager": "pnpm@10.28.0+sha512.abc"}
    repo = _repo(tmp_path, {"pnpm-lock.yaml": "", "package.json": json.dumps(pinned)})
    assert package_manager(repo, "pnpm") == "pnpm@10.28.0"  # the hash is dropped
    assert package_manager(repo, "yarn") == "yarn"  # pinned for another manager
    assert node_install(repo, "vitest") == "npx -y pnpm@10.28.0 install --frozen-lockfile"
    hint = manager_hint(repo)
    assert "pnpm-lock.yaml needs pnpm, which is not on PATH" in hint
    assert "`npm i -g pnpm@10.28.0`" in hint
    _tool(path_with, "pnpm")
    assert node_install(repo, "vitest") == "pnpm install --frozen-lockfile"
    assert manager_hint(repo) == ""


def test_node_modules_are_needed_only_for_declared_dependencies(tmp_path: Path) -> None:
    repo = _repo(tmp_path, {"package.json": json.dumps({"devDependencies": {"vitest": "^4"}})})
    assert needs_node_modules(repo)
    (tmp_path / "node_modules").mkdir()  # hoisted to a parent, as workspaces do
    assert not needs_node_modules(repo)
    empty = tmp_path / "sub" / "empty"
    empty.mkdir(parents=True)
    (empty / "package.json").write_text(json.dumps({"dependencies": {}}))
    assert not needs_node_modules(empty)

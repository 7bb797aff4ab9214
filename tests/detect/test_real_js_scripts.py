"""Derived commands run the suite the maintainers run, from package.json scripts.

Fixtures are small copies of the real projects' shapes:
- swup: `test` = `npm run test:unit && npm run test:e2e`, `test:unit` = `vitest run --config
  ./tests/config/vitest.config.ts` (a stray failing test outside the config's include);
- uuid: `pretest` = `npm run build`, `test` = `node --test --enable-source-maps
  dist-node/test/*.js` (the glob exists only after the build; a stray test at the root);
- ms: `pnpm run test:nodejs && pnpm run test:edge`, two jest runs;
- ufo: `pnpm lint && vitest run --typecheck`.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
import yaml
from prove_helpers import git, make_change, make_repo, prove_json, receipts_of

from changeloop.cli.main import main

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
VITEST_MODULES = EXAMPLES / "node-vitest" / "node_modules"


def _commit(root: Path) -> None:
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "change")


def _init(root: Path, capsys: Any) -> dict[str, Any]:
    capsys.readouterr()
    assert main(["evidence", "init", "c1", "--write", "--root", str(root)]) == 0
    path = root / "openspec/changes/c1/execution.yaml"
    doc: dict[str, Any] = yaml.safe_load(path.read_text())
    out: dict[str, Any] = doc["providers"]
    return out


def test_uuid_shape_pretest_build_and_globbed_paths(tmp_path: Path, capsys: Any) -> None:
    scripts = {
        "build": "mkdir -p dist-node/test && cp src/test/*.js dist-node/test/",
        "pretest": "npm run build",
        "test": "node --test --enable-source-maps dist-node/test/*.js",
    }
    same = 'const {describe, test} = require("node:test");\n'
    root = make_repo(
        tmp_path / "ws",
        {
            "package.json": json.dumps({"name": "u", "scripts": scripts}),
            ".gitignore": "dist-node/\n",
            "src/test/a.test.js": same + 'describe("v1", () => { test("ok", () => {}); });\n',
            "src/test/b.test.js": same + 'describe("v4", () => { test("ok", () => {}); });\n',
            # a stray test node would find with no paths: never part of the maintainers' suite
            "stray.test.js": same + 'test("stray", () => { throw new Error("not ours"); });\n',
        },
    )
    make_change(root, "c1", "version: 3\nrequires: [test]\n")
    _commit(root)
    providers = _init(root, capsys)
    assert providers["build"]["command"] == ["npm", "run", "build"]
    test = providers["test"]
    assert test["dependsOn"] == ["build"]
    assert test["command"][:2] == ["node", "--test"] and "--enable-source-maps" in test["command"]
    assert test["command"][-1] == "dist-node/test/*.js"  # expanded when it runs
    code, doc = prove_json(root, "c1", capsys=capsys)
    assert code == 0, doc
    assert receipts_of(doc, "test")["test"]["tests"]["discovered"] == 2


@pytest.mark.skipif(
    not (VITEST_MODULES / ".bin" / "vitest").exists(), reason="npm ci in examples/node-vitest"
)
def test_swup_shape_keeps_the_scripts_config(tmp_path: Path, capsys: Any) -> None:
    scripts = {
        "test": "npm run test:unit && npm run test:e2e",
        "test:unit": "vitest run --config ./tests/config/vitest.config.ts",
        "test:e2e": "npx playwright test --config ./tests/config/playwright.config.ts",
    }
    config = (
        "import { defineConfig } from 'vitest/config';\n"
        "export default defineConfig({ test: { include: ['tests/unit/**/*.test.js'] } });\n"
    )
    unit = "import { test, expect } from 'vitest';\n"
    root = make_repo(
        tmp_path / "ws",
        {
            "package.json": json.dumps(
                {
                    "name": "s",
                    "type": "module",
                    "scripts": scripts,
                    "devDependencies": {"vitest": "^3.2.4"},
                }
            ),
            ".gitignore": "node_modules\n",
            "tests/config/vitest.config.ts": config,
            "tests/unit/a.test.js": unit + "test('one', () => expect(1).toBe(1));\n"
            "test('two', () => expect(2).toBe(2));\n",
            # vitest's default include would run this one and fail
            "tests/functional/page.test.js": unit
            + "test('e2e', () => { throw new Error('browser'); });\n",
        },
    )
    os.symlink(VITEST_MODULES, root / "node_modules")
    make_change(root, "c1", "version: 3\nrequires: [test]\n")
    _commit(root)
    providers = _init(root, capsys)
    assert "--config" in providers["test"]["command"]
    assert "./tests/config/vitest.config.ts" in providers["test"]["command"]
    assert "playwright" not in json.dumps(providers)  # `test` needs no browser run
    code, doc = prove_json(root, "c1", capsys=capsys)
    assert code == 0, doc
    assert receipts_of(doc, "test")["test"]["tests"]["discovered"] == 2


def test_ms_shape_one_provider_per_runner_invocation(tmp_path: Path, capsys: Any) -> None:
    scripts = {
        "test": "pnpm run test:nodejs && pnpm run test:edge",
        "test:nodejs": "jest --env node",
        "test:edge": "jest --env @edge-runtime/jest-environment --no-coverage",
    }
    root = make_repo(
        tmp_path / "ws",
        {
            "package.json": json.dumps(
                {"name": "m", "scripts": scripts, "devDependencies": {"jest": "29.7.0"}}
            )
        },
    )
    make_change(root, "c1", "version: 3\nrequires: [test]\n")
    _commit(root)
    providers = _init(root, capsys)
    first, edge = providers["test"], providers["test-edge"]
    assert first["command"][:4] == ["npx", "jest", "--env", "node"]
    assert edge["command"][:5] == [
        "npx",
        "jest",
        "--env",
        "@edge-runtime/jest-environment",
        "--no-coverage",
    ]
    assert "discoveryProvider" not in first and edge["discoveryProvider"] == "discovery-edge"
    assert first["report"] != edge["report"]
    capsys.readouterr()  # the plan passes preflight (docs/adapters)
    assert main(["prove", "c1", "--root", str(root), "--dry-run", "--json"]) == 0


def test_ufo_shape_typecheck_kept_lint_left_out(tmp_path: Path, capsys: Any) -> None:
    scripts = {"lint": "eslint .", "test": "pnpm lint && vitest run --typecheck"}
    root = make_repo(
        tmp_path / "ws",
        {
            "package.json": json.dumps(
                {"name": "f", "scripts": scripts, "devDependencies": {"vitest": "^3.2.4"}}
            )
        },
    )
    make_change(root, "c1", "version: 3\nrequires: [test]\n")
    _commit(root)
    providers = _init(root, capsys)
    assert list(providers) == ["test"]
    command = providers["test"]["command"]
    assert command[:4] == ["npx", "vitest", "run", "--typecheck"]
    assert "eslint" not in json.dumps(providers) and "lint" not in command


def test_swup_shape_browser_keeps_the_playwright_config(tmp_path: Path, capsys: Any) -> None:
    scripts = {
        "test": "npm run test:unit && npm run test:e2e",
        "test:unit": "vitest run --config ./tests/config/vitest.config.ts",
        "test:e2e": "npx playwright test --ui --config ./tests/config/playwright.config.ts",
    }
    root = make_repo(
        tmp_path / "ws",
        {
            "package.json": json.dumps(
                {"name": "s", "scripts": scripts, "devDependencies": {"@playwright/test": "1.5"}}
            )
        },
    )
    make_change(root, "c1", "version: 3\nrequires: [browser]\n")
    _commit(root)
    providers = _init(root, capsys)
    assert providers["browser"]["command"] == [
        "npx", "playwright", "test", "--config", "./tests/config/playwright.config.ts",
    ]  # fmt: skip

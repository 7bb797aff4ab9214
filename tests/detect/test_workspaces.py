"""Derivation follows the workspace: the root's build first, then each member's own runner,
run in that member with its own config, each with its own discovery.

The shape is a pnpm monorepo's (`"test": "pnpm --color -r run test"`, `"pretest":
"pnpm run build"`, vitest in each member, installed in the member's own
node_modules as pnpm lays it out): a single root `npx vitest run` would find no
vitest at the root, skip each member's config and run before the build the tests
import.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
import yaml
from bootstrap_helpers import CHANGE, cli, workspace
from prove_helpers import git, make_change, make_repo, prove_json, receipts_of

from changeloop.cli.main import main
from changeloop.detect.scripts import runner_calls

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
VITEST_MODULES = EXAMPLES / "node-vitest" / "node_modules"
needs_vitest = pytest.mark.skipif(
    not (VITEST_MODULES / ".bin" / "vitest").exists(), reason="npm ci in examples/node-vitest"
)

UNIT = "import { test, expect } from 'vitest';\n"


def _pnpm_monorepo(root: Path) -> Path:
    scripts = {
        "build": "node build.mjs",
        "pretest": "pnpm run build",
        "test": "pnpm --color -r run test",
        "lint": "biome lint",
    }
    return make_repo(
        root,
        {
            "package.json": json.dumps({"name": "mono", "private": True, "scripts": scripts}),
            "pnpm-workspace.yaml": "packages:\n  - 'packages/*'\n",
            ".gitignore": "node_modules\ndist\n",
            # the root build writes what core's tests import
            "build.mjs": "import { mkdirSync, writeFileSync } from 'node:fs';\n"
            "mkdirSync('packages/core/dist', { recursive: true });\n"
            "writeFileSync('packages/core/dist/index.js', 'export const two = 2;\\n');\n",
            "packages/core/package.json": json.dumps(
                {"name": "@m/core", "type": "module", "scripts": {"test": "vitest run"}}
            ),
            # core's own config: only spec/ (a root run would take the stray test too)
            "packages/core/vitest.config.js": "import { defineConfig } from 'vitest/config';\n"
            "export default defineConfig({ test: { include: ['spec/**/*.test.js'] } });\n",
            "packages/core/spec/a.test.js": UNIT + "import { two } from '../dist/index.js';\n"
            "test('built', () => expect(two).toBe(2));\n"
            "test('colour', () => expect(process.env.FORCE_COLOR).toBe('1'));\n",
            "packages/core/test/stray.test.js": UNIT
            + "test('not in the config', () => { throw new Error('ran outside the config'); });\n",
            "packages/prompts/package.json": json.dumps(
                {"name": "@m/prompts", "type": "module", "scripts": {"test": "vitest run"}}
            ),
            "packages/prompts/test/b.test.js": UNIT
            + "test('one', () => expect(1).toBe(1));\n"
            + "test('two', () => expect(2).toBe(2));\n"
            + "test('three', () => expect(3).toBe(3));\n",
            "packages/docs/package.json": json.dumps({"name": "@m/docs", "scripts": {}}),
        },
    )


def _init(root: Path, capsys: Any) -> dict[str, Any]:
    capsys.readouterr()
    assert main(["evidence", "init", CHANGE, "--write", "--root", str(root)]) == 0
    doc = yaml.safe_load((root / f"openspec/changes/{CHANGE}/execution.yaml").read_text())
    found: dict[str, Any] = doc["providers"]
    return found


@needs_vitest
def test_pnpm_recursive_test_runs_each_member_after_the_root_build(
    tmp_path: Path, capsys: Any
) -> None:
    root = _pnpm_monorepo(tmp_path / "ws")
    for member in ("core", "prompts"):  # pnpm's layout: vitest in each member, none at the root
        os.symlink(VITEST_MODULES, root / "packages" / member / "node_modules")
    make_change(root, CHANGE, "version: 3\nrequires: [test]\n")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "change")

    providers = _init(root, capsys)
    assert set(providers) == {"build", "test-core", "test-prompts"}  # docs has no tests
    assert providers["build"]["command"] == ["npm", "run", "build"]
    core = providers["test-core"]
    assert core["workdir"] == "packages/core"
    assert core["command"][:3] == ["npx", "vitest", "run"]
    assert "--outputFile=../../.changeloop/reports/test-core.json" in core["command"]
    assert core["report"] == ".changeloop/reports/test-core.json"
    assert core["dependsOn"] == ["build"]
    assert core["discoveryProvider"] == "discovery-core"
    assert core["env"] == {"FORCE_COLOR": "1"}  # pnpm --color, which the scripts see
    assert "repository" not in core  # the one repository evidence.yaml leaves unnamed
    assert providers["test-prompts"]["workdir"] == "packages/prompts"

    code, doc = prove_json(root, CHANGE, capsys=capsys)
    assert code == 0, doc
    assert receipts_of(doc, "test-core")["test"]["tests"]["discovered"] == 2
    assert receipts_of(doc, "test-prompts")["test"]["tests"]["discovered"] == 3
    discovery = {r["provider"] for e in doc["providers"] for r in e["receipts"]}
    assert {"discovery-core", "discovery-prompts"} <= discovery


def test_doctor_resolves_each_members_runner_where_it_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = _pnpm_monorepo(tmp_path / "ws")
    make_change(root, CHANGE, "version: 3\nrequires: [test]\n")
    # core has its vitest; prompts has none of its own and the root has none either
    bin_dir = root / "packages/core/node_modules/.bin"
    bin_dir.mkdir(parents=True)
    (bin_dir / "vitest").write_text("#!/bin/sh\n")
    (root / "pnpm-lock.yaml").write_text("lockfileVersion: '9.0'\n")
    code, doc, _ = cli(capsys, "evidence", "doctor", CHANGE, "--json", "--root", str(root))
    assert code == 1 and doc is not None
    missing = [
        f for f in doc["findings"] if f["kind"] == "tool-missing" and "vitest" in f["message"]
    ]
    assert len(missing) == 1, doc["findings"]
    assert "test-prompts" in missing[0]["message"] and "packages/prompts" in missing[0]["message"]
    assert "pnpm" in missing[0]["playbook_command"] and "install" in missing[0]["playbook_command"]


def test_npm_workspaces_build_each_member_before_its_tests(tmp_path: Path) -> None:
    scripts = {"test": "npm test --workspaces --if-present", "build": "node scripts/build.js"}
    root = workspace(
        tmp_path,
        {
            "package.json": json.dumps(
                {"name": "r", "workspaces": ["packages/*"], "scripts": scripts}
            ),
            "packages/compat/package.json": json.dumps(
                {"name": "@e/compat", "scripts": {"test": "mocha tests/*.js"}}
            ),
            "packages/kit/package.json": json.dumps(
                {
                    "name": "@e/kit",
                    "scripts": {
                        "build": "rollup -c",
                        "pretest": "npm run build",
                        "test": "npm run test:types && npm run test:unit",
                        "test:types": "tsc -p tests/types",
                        "test:unit": "mocha tests/",
                    },
                }
            ),
            "packages/core/package.json": json.dumps(
                {"name": "@e/core", "scripts": {"test": "npm run test:types", "test:types": "tsc"}}
            ),
        },
    )
    calls = runner_calls(root).calls
    assert [(c.cwd, c.adapter, c.args, c.build) for c in calls] == [
        ("packages/compat", "mocha", ("tests/*.js",), ()),
        ("packages/kit", "mocha", ("tests/",), ("npm run build",)),
    ]


@pytest.mark.parametrize(
    ("test", "members", "pre"),
    [
        ("yarn workspaces foreach -A --topological run test", ["a", "b"], False),
        ("yarn workspaces run test", ["a", "b"], True),
        ("pnpm --filter './packages/a' -r run test", ["a"], True),
        ("pnpm -r --filter '!@w/b' test", ["a"], True),
        ("npm run test -w packages/b", ["b"], True),
        ("lerna run test --scope @w/a", ["a"], True),
    ],
)
def test_every_managers_recursive_run_is_followed(
    tmp_path: Path, test: str, members: list[str], pre: bool
) -> None:
    member = {"test": "vitest run", "pretest": "tsc"}
    root = workspace(
        tmp_path,
        {
            "package.json": json.dumps(
                {"name": "w", "workspaces": ["packages/*"], "scripts": {"test": test}}
            ),
            "packages/a/package.json": json.dumps({"name": "@w/a", "scripts": member}),
            "packages/b/package.json": json.dumps({"name": "@w/b", "scripts": member}),
        },
    )
    calls = runner_calls(root).calls
    assert [c.cwd for c in calls] == [f"packages/{m}" for m in members]
    assert all(c.build == (("tsc",) if pre else ()) for c in calls)


def _junit_provider(name: str, report: str, extra: str = "") -> str:
    write = (
        f"open('{report}', 'w').write('<testsuite name=\"s\"><testcase classname=\"c\" "
        f'name="{name}"/></testsuite>\')'
    )
    return (
        f"  {name}:\n    adapter: test-discovery\n    command: [python3, -c, {json.dumps(write)}]\n"
        f"    report: {report}\n{extra}"
    )


def test_hand_named_member_providers_get_their_discovery_named(tmp_path: Path, capsys: Any) -> None:
    """`test-core` and `test-prompts` without discoveryProvider: each issues its discovery
    receipt under its own name (no refusal 'only the provider named test ...')."""
    root = make_repo(tmp_path / "ws", {"README": "x\n"})
    execution = (
        "version: 1\nproviders:\n"
        + _junit_provider("test-core", "core.xml")
        + _junit_provider("test-prompts", "prompts.xml")
    )
    make_change(root, CHANGE, "version: 3\nrequires: [test, discovery]\n", execution)
    code, doc = prove_json(root, CHANGE, capsys=capsys)
    assert code == 0, doc
    assert receipts_of(doc, "test-core")["discovery"]["provider"] == "test-core"
    assert receipts_of(doc, "test-prompts")["discovery"]["provider"] == "test-prompts"
    assert receipts_of(doc, "test-core")["discovery"]["status"] == "pass"


def test_two_discovery_receipts_under_one_name_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = make_repo(tmp_path / "ws", {"README": "x\n"})
    execution = (
        "version: 1\nproviders:\n"
        + _junit_provider("test-core", "core.xml")
        + _junit_provider("test-prompts", "prompts.xml", "    discoveryProvider: test-core\n")
    )
    make_change(root, CHANGE, "version: 3\nrequires: [test]\n", execution)
    capsys.readouterr()
    assert main(["prove", CHANGE, "--root", str(root), "--json"]) == 2
    out = capsys.readouterr()
    assert "discovery_collision" in out.out + out.err
    assert "'test-prompts' issues its discovery receipt as 'test-core'" in out.out + out.err

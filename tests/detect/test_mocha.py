"""mocha: derived with its own xunit reporter, counted exactly, installed before it runs.

mocha's suites may hold two tests of one title (express has eight such pairs):
both ran, both count. Only a producer known to write one test twice (pytest's
failing call and teardown) has its repeated names merged.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from bootstrap_helpers import CHANGE, cli, workspace
from prove_helpers import git, make_change, make_repo, prove_json, receipts_of

from changeloop.cli.main import main
from changeloop.runner_reports import read_report

MOCHA_MODULES = Path(__file__).resolve().parents[1] / "fixtures" / "mocha" / "node_modules"
needs_mocha = pytest.mark.skipif(
    not (MOCHA_MODULES / ".bin" / "mocha").exists(), reason="npm ci in tests/fixtures/mocha"
)

SCRIPT = "mocha --require test/env.js --reporter spec --check-leaks test/"
SPEC = """\
const assert = require('node:assert');
describe('router', () => {
  it('matches a path', () => assert.ok(true));
  it('matches a path', () => assert.ok(true));   // a second test of the same title
  it.skip('waits for later', () => {});
  describe('params', () => {
    it('decodes', () => assert.equal(decodeURIComponent('%20'), ' '));
  });
});
"""


def _repo(root: Path, spec: str = SPEC) -> Path:
    package = {"name": "m", "scripts": {"test": SCRIPT}, "devDependencies": {"mocha": "11.7.5"}}
    return make_repo(
        root,
        {
            "package.json": json.dumps(package),
            ".gitignore": "node_modules\n",
            "test/env.js": "process.env.NODE_ENV = 'test';\n",
            "test/router.test.js": spec,
        },
    )


def test_mocha_is_derived_with_its_own_reporter_to_a_file(tmp_path: Path, capsys: Any) -> None:
    root = _repo(tmp_path / "ws")
    make_change(root, CHANGE, "version: 3\nrequires: [test]\n")
    capsys.readouterr()
    assert main(["evidence", "init", CHANGE, "--write", "--root", str(root)]) == 0
    doc = yaml.safe_load((root / f"openspec/changes/{CHANGE}/execution.yaml").read_text())
    test = doc["providers"]["test"]
    assert test["command"] == [
        "npx",
        "mocha",
        "--require",
        "test/env.js",
        "--check-leaks",
        "test/",  # the maintainers' own flags and paths; their `--reporter spec` dropped
        "--reporter",
        "xunit",
        "--reporter-option",
        "output=.changeloop/reports/test.xml",
    ]
    assert test["report"] == ".changeloop/reports/test.xml"


def _mochas_own_count(root: Path) -> dict[str, int]:
    proc = subprocess.run(
        ["npx", "mocha", "--require", "test/env.js", "--reporter", "json", "test/"],
        cwd=root,
        capture_output=True,
        text=True,
        check=False,
    )
    stats: dict[str, int] = json.loads(proc.stdout)["stats"]
    return stats


@needs_mocha
def test_every_mocha_test_counts_two_of_one_title_included(tmp_path: Path, capsys: Any) -> None:
    root = _repo(tmp_path / "ws")
    os.symlink(MOCHA_MODULES, root / "node_modules")
    make_change(root, CHANGE, "version: 3\nrequires: [test]\n")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "change")
    assert main(["evidence", "init", CHANGE, "--write", "--root", str(root)]) == 0
    code, doc = prove_json(root, CHANGE, capsys=capsys)
    assert code == 0, doc
    tests = receipts_of(doc, "test")["test"]["tests"]
    own = _mochas_own_count(root)
    assert own["tests"] == 4 and own["pending"] == 1
    assert tests == {"discovered": own["tests"], "passed": own["passes"], "failed": 0, "skipped": 1}


@needs_mocha
def test_a_failing_twin_is_counted_and_named(tmp_path: Path, capsys: Any) -> None:
    failing = SPEC.replace(
        "it('matches a path', () => assert.ok(true));   // a second",
        "it('matches a path', () => assert.ok(false));  // a second",
    )
    root = _repo(tmp_path / "ws", failing)
    os.symlink(MOCHA_MODULES, root / "node_modules")
    make_change(root, CHANGE, "version: 3\nrequires: [test]\n")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "change")
    assert main(["evidence", "init", CHANGE, "--write", "--root", str(root)]) == 0
    code, doc = prove_json(root, CHANGE, capsys=capsys)
    assert code == 1
    test = receipts_of(doc, "test")["test"]
    assert test["tests"] == {"discovered": 4, "passed": 2, "failed": 1, "skipped": 1}
    assert "1 of 4 test(s) failed: router::matches a path" in test["reason"]


def _junit(suite: str, cases: str) -> bytes:
    return f'<testsuites name="{suite}"><testsuite name="{suite}">{cases}</testsuite></testsuites>'.encode()


def test_repeated_names_merge_only_for_a_producer_that_repeats_a_test_by_phase() -> None:
    twice = '<testcase classname="c" name="t"/><testcase classname="c" name="t"/>'
    mocha = read_report(_junit("Mocha Tests", twice), "junit")
    assert mocha.counts is not None and mocha.counts.discovered == 2
    unknown = read_report(_junit("someone", twice), "junit")
    assert unknown.counts is not None and unknown.counts.discovered == 2
    # pytest: a failing call and a failing teardown of one test are two <testcase>s
    phases = (
        '<testcase classname="t.m" name="t"><failure message="call"/></testcase>'
        '<testcase classname="t.m" name="t"><error message="failed on teardown"/></testcase>'
    )
    pytest_report = read_report(_junit("pytest", phases), "junit")
    assert pytest_report.counts is not None and pytest_report.counts.discovered == 1


def test_npx_mocha_without_node_modules_is_unresolved(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = workspace(
        tmp_path,
        {
            "package.json": json.dumps(
                {
                    "name": "m",
                    "scripts": {"test": "mocha test/"},
                    "devDependencies": {"mocha": "^11"},
                }
            ),
            "test/a.test.js": "it('x', () => {});\n",
        },
    )
    code, doc, _ = cli(capsys, "evidence", "doctor", CHANGE, "--json", "--root", str(root))
    assert code == 1 and doc is not None
    [finding] = [f for f in doc["findings"] if f["kind"] == "tool-missing"]
    assert "npx mocha" in finding["message"]
    assert finding["playbook_command"] == "npm install"  # no lock file: what package.json declares

"""A unittest project is proven with unittest, never pytest in its place.

The project's tox.ini runs ``python -m unittest``; its test module adds doctests
through ``load_tests`` (which pytest would silently skip); pytest configuration
is present too, and must not decide the runner. detect says unittest, init
derives ``python3 -m unittest``, and prove's discovered count equals the
``Ran N`` unittest itself prints.
"""

from __future__ import annotations

import base64
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from prove_helpers import make_change, make_repo, prove_json, receipts_of

from changeloop.cli.main import main

CHANGE = "add-doubling"

LIB = '''
def double(x):
    """Double a number.

    >>> double(2)
    4
    >>> double(-1)
    -2
    """
    return x * 2


def halve(x):
    """Halve a number.

    >>> halve(4)
    2.0
    """
    return x / 2
'''

TESTS = '''
import doctest
import unittest

import mylib


def load_tests(loader, tests, ignore):
    tests.addTests(doctest.DocTestSuite(mylib))
    return tests


class TestDouble(unittest.TestCase):
    def test_double(self):
        """Doubles [claim:doubles]."""
        self.assertEqual(mylib.double(3), 6)

    def test_zero(self):
        self.assertEqual(mylib.double(0), 0)
'''

BROKEN = """

class TestBroken(unittest.TestCase):
    def test_fails(self):
        self.assertEqual(mylib.double(1), 3)

    def test_errors(self):
        raise KeyError("missing")
"""

FILES = {
    "mylib/__init__.py": LIB,
    "tests/__init__.py": "",
    "tests/test_double.py": TESTS,
    "tox.ini": "[tox]\nenvlist = py311\n\n[testenv]\ncommands =\n"
    "    python -m unittest discover -s tests -t . -v {posargs}\n",
    # pytest configuration is present too; the maintainers' command decides.
    "pyproject.toml": '[project]\nname = "mylib"\nversion = "1.0"\n\n'
    '[tool.pytest.ini_options]\ntestpaths = ["tests"]\n',
    ".gitignore": ".changeloop/\n",
}

EVIDENCE = """\
version: 3
claims:
  doubles:
    statement: double() doubles
    requires: [test]
"""


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, Any]]:
    capsys.readouterr()
    code = main(list(argv))
    return code, json.loads(capsys.readouterr().out)


def _ran(root: Path) -> int:
    proc = subprocess.run(
        [sys.executable, "-m", "unittest", "discover", "-s", "tests", "-t", ".", "-v"],
        cwd=root,
        capture_output=True,
        text=True,
        check=False,
    )
    found = re.search(r"^Ran (\d+) tests?", proc.stderr, re.MULTILINE)
    assert found, proc.stderr
    return int(found.group(1))


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = make_repo(tmp_path / "proj", FILES)
    make_change(root, CHANGE, EVIDENCE)
    return root


def test_detect_init_prove_run_unittest(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, doc = _cli(capsys, "evidence", "detect", CHANGE, "--json", "--root", str(project))
    assert code == 0
    assert doc["repositories"]["self"] == [
        {
            "adapter": "unittest",
            "test_type": "python",
            "detection_source": "manifest",
            "version": None,
            "evidence": "tox.ini [testenv] commands",
        }
    ]

    code, doc = _cli(
        capsys, "evidence", "init", CHANGE, "--write", "--json", "--root", str(project)
    )
    assert code == 0, doc
    execution = yaml.safe_load(
        (project / "openspec" / "changes" / CHANGE / "execution.yaml").read_text()
    )
    test = execution["providers"]["test"]
    assert test["command"] == [
        "python",
        "-m",
        "unittest",
        "discover",
        "-s",
        "tests",
        "-t",
        ".",
        "-v",
    ]
    assert test["format"] == "unittest" and "pytest" not in " ".join(test["command"])
    # No bootstrap verb edits the project's own configuration.
    assert (project / "pyproject.toml").read_text() == FILES["pyproject.toml"]
    assert (project / "tox.ini").read_text() == FILES["tox.ini"]

    code, doc = _cli(capsys, "evidence", "doctor", CHANGE, "--json", "--root", str(project))
    assert (code, doc["unresolved"]) == (0, 0), doc

    code, doc = prove_json(project, CHANGE, capsys=capsys)
    entries = receipts_of(doc, "test")
    test, disc = _statement(project, entries["test"]), _statement(project, entries["discovery"])
    ran = _ran(project)
    assert ran == 4  # two methods + two doctests (one per docstring) only load_tests adds
    assert test["changeloop"]["status"] == "pass", test
    assert test["changeloop"]["tests"] == {
        "discovered": ran,
        "passed": ran,
        "failed": 0,
        "skipped": 0,
    }
    assert test["changeloop"]["observer"]["tool"] == "unittest"
    assert disc["changeloop"]["status"] == "pass"
    assert test["changeloop"]["claims"]["doubles"] == "credited"
    assert sorted(test["passedTests"]) == [
        "mylib::double",
        "mylib::halve",
        "tests.test_double.TestDouble::test_double",
        "tests.test_double.TestDouble::test_zero",
    ]
    assert code == 0 and doc["status"] == "proven", doc


def test_a_failing_and_an_erroring_test_are_counted_apart(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (project / "tests" / "test_double.py").write_text(TESTS + BROKEN)
    subprocess.run(["git", "commit", "-qam", "broken"], cwd=project, check=True)
    code, _ = _cli(capsys, "evidence", "init", CHANGE, "--write", "--json", "--root", str(project))
    assert code == 0
    code, doc = prove_json(project, CHANGE, capsys=capsys)
    assert code == 1
    test = _statement(project, receipts_of(doc, "test")["test"])
    ran = _ran(project)
    assert ran == 6
    assert test["changeloop"]["status"] == "fail"
    assert test["changeloop"]["tests"] == {
        "discovered": ran,
        "passed": 4,
        "failed": 2,
        "skipped": 0,
    }
    summary = test["changeloop"]["details"]["summary"]
    assert (summary["failures"], summary["errors"], summary["ran"]) == (1, 1, ran)
    assert sorted(test["failedTests"]) == [
        "tests.test_double.TestBroken::test_errors",
        "tests.test_double.TestBroken::test_fails",
    ]
    kinds = [f["kind"] for f in test["changeloop"]["findings"]]
    assert kinds.count("test-failed") == 2
    messages = " ".join(f["message"] for f in test["changeloop"]["findings"])
    assert "KeyError: 'missing'" in messages and "AssertionError: 2 != 3" in messages


def _statement(root: Path, entry: dict[str, Any]) -> dict[str, Any]:
    """The signed statement's predicate behind one receipt of prove's JSON."""
    envelope = json.loads((root / entry["path"]).read_text())
    out: dict[str, Any] = json.loads(base64.b64decode(envelope["payload"]))["predicate"]
    return out

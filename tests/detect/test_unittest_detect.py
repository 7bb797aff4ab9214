"""unittest detection from the commands the project's own config runs, read never executed."""

from __future__ import annotations

from pathlib import Path

import pytest
from bootstrap_helpers import write

from changeloop.detect import runner_commands
from changeloop.detect.repository import detect_repository

PYTEST_CONFIG = '[project]\nname = "x"\n\n[tool.pytest.ini_options]\ntestpaths = ["tests"]\n'
# A noxfile that would leave a mark if anything executed it.
NOXFILE = """
import nox
open("EXECUTED", "w").write("nox ran")

@nox.session
def tests(session):
    session.install("-e", ".")
    session.run("python", "-m", "unittest", "discover", "-s", "tests", "-v")
"""
WORKFLOW = """
name: ci
on: [push]
jobs:
  unit:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
      - run: pip install -e .
      - run: |
          python -m unittest -v tests.test_core
"""
MAKEFILE = "all: build\n\nbuild:\n\tpython setup.py build\n\ntest:\n\t@python -m unittest -q\n"


@pytest.mark.parametrize(
    ("files", "evidence", "args"),
    [
        (
            {
                "tox.ini": "[testenv]\ncommands =\n    python -m unittest discover -s tests {posargs}\n"
            },
            "tox.ini [testenv] commands",
            ("discover", "-s", "tests"),
        ),
        ({"noxfile.py": NOXFILE}, "noxfile.py session tests", ("discover", "-s", "tests")),
        ({"Makefile": MAKEFILE}, "Makefile target test", ()),
        (
            {".github/workflows/ci.yml": WORKFLOW},
            ".github/workflows/ci.yml jobs.unit run",
            ("tests.test_core",),
        ),
    ],
)
def test_maintainers_unittest_command_beats_pytest_config(
    tmp_path: Path, files: dict[str, str], evidence: str, args: tuple[str, ...]
) -> None:
    write(tmp_path, {"pyproject.toml": PYTEST_CONFIG, **files})
    found = detect_repository(tmp_path)
    assert [(d.adapter, d.test_type, d.detection_source, d.evidence) for d in found] == [
        ("unittest", "python", "manifest", evidence)
    ]
    argv, report = runner_commands.test_command(found[0], tmp_path, ".changeloop/reports/test")
    assert argv == ("python", "-m", "unittest", *args, "-v") and report is None
    assert not (tmp_path / "EXECUTED").exists()


def test_maintainers_pytest_command_stays_pytest(tmp_path: Path) -> None:
    write(tmp_path, {"tox.ini": "[testenv]\ncommands = pytest -q {posargs}\n"})
    found = detect_repository(tmp_path)
    assert [(d.adapter, d.evidence) for d in found] == [("pytest", "tox.ini [testenv] commands")]


def test_first_maintainers_command_decides(tmp_path: Path) -> None:
    write(tmp_path, {"tox.ini": "[testenv]\ncommands = pytest\n", "Makefile": MAKEFILE})
    assert [d.adapter for d in detect_repository(tmp_path)] == ["pytest"]


def test_pytest_config_alone_is_still_pytest(tmp_path: Path) -> None:
    write(tmp_path, {"pyproject.toml": PYTEST_CONFIG, "Makefile": "test:\n\tpytest\n"})
    assert [d.adapter for d in detect_repository(tmp_path)] == ["pytest"]


def test_a_non_test_make_target_says_nothing(tmp_path: Path) -> None:
    write(tmp_path, {"Makefile": "docs:\n\tpython -m unittest\n"})
    assert detect_repository(tmp_path) == []


def test_broken_config_files_are_ignored(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "noxfile.py": "def (:\n",
            "tox.ini": "[testenv\n",
            ".github/workflows/ci.yml": "jobs: [unclosed\n",
        },
    )
    assert detect_repository(tmp_path) == []

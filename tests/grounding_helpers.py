"""A small real package with entry points, and ways to run its tests under changeloop's plugin."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from changeloop.grounding.citations import configure, read_records
from changeloop.providers.pytest_injection import inject
from changeloop.runner_reports import read_report

PACKAGE = {
    "pkg/__init__.py": "",
    "pkg/api.py": """
        from pkg import core

        def create_thing(n):
            return core.double(n)
        """,
    "pkg/core.py": """
        import threading

        def double(n):
            return n * 2

        def in_thread(n):
            box = []
            worker = threading.Thread(target=lambda: box.append(double(n)))
            worker.start()
            worker.join()
            return box[0]
        """,
    "pkg/schema.json": '{"fields": ["id"]}\n',
    "pytest.ini": "[pytest]\ntestpaths = tests\npythonpath = .\n",
    "tests/test_values.py": """
        import json
        import threading
        from pathlib import Path

        import pytest

        from pkg import api, core


        @pytest.mark.claim("c-grounded", depth="unit", ref="JIRA-1")
        def test_grounded():
            assert api.create_thing(2) == 4


        @pytest.mark.claim("c-ungrounded")
        def test_ungrounded():
            assert core.double(3) == 6


        @pytest.mark.claim("c-inert")
        def test_inert():
            assert True


        @pytest.mark.claim("c-structural", depth="unit")
        def test_structural():
            doc = json.loads((Path(__file__).parent.parent / "pkg" / "schema.json").read_text())
            assert doc["fields"] == ["id"]


        @pytest.mark.claim("c-dispatched")
        def test_dispatched():
            box = []
            worker = threading.Thread(target=lambda: box.append(core.double(5)))
            worker.start()
            worker.join()
            assert box == [10]


        def test_uncited():
            assert core.double(1) == 2
        """,
}
ENTRY_POINTS = ("pkg/api.py::create_*",)
EXPECTED = {
    "test_grounded": "grounded",
    "test_ungrounded": "ungrounded",
    "test_inert": "inert",
    "test_structural": "inert",
    "test_dispatched": "dispatched",
}


def write_tree(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        target = root / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return root


def run_traced(
    python: str, project: Path, run_dir: Path, entry_points: tuple[str, ...] = ENTRY_POINTS
) -> tuple[subprocess.CompletedProcess[str], dict[str, dict[str, Any]], Any]:
    """Run the project's pytest the way the test-discovery adapter does; (proc, record, report)."""
    argv = [python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--junitxml=report.xml"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("CHANGELOOP_")}
    injected = inject(argv, env, run_dir, {"pkg": "pkg"})
    env2 = configure(run_dir, "self", project, entry_points, injected.env)
    proc = subprocess.run(
        list(injected.argv),
        cwd=project,
        env=env2,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    return proc, read_records(run_dir), read_report(project / "report.xml")


def groundings(report: Any) -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    for case in report.tests:
        for cite in case.citations:
            out[case.name] = cite.grounding
    return out


def make_venv(base: Path, version: str) -> str:
    """A venv of pyenv's Python ``version`` with pytest from the local pip cache (or skip)."""
    exe = Path.home() / ".pyenv" / "versions"
    found = sorted(exe.glob(f"{version}.*/bin/python{version}"))
    if not found:
        pytest.skip(f"Python {version} is not installed (pyenv)")
    venv = base / f"venv{version}"
    subprocess.run([str(found[-1]), "-m", "venv", str(venv)], check=True, timeout=300)
    python = venv / "bin" / "python"
    proc = subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "pytest"],
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    if proc.returncode != 0:
        pytest.skip(f"pip cannot install pytest for {version}: {proc.stderr[-500:]}")
    return str(python)


def copy_project(tmp_path: Path, files: dict[str, str] = PACKAGE) -> Path:
    project = tmp_path / "project"
    if project.exists():
        shutil.rmtree(project)
    return write_tree(project, files)


def this_python() -> str:
    return sys.executable


def dump(obj: Any) -> str:
    return json.dumps(obj, indent=1, default=str)[:3000]

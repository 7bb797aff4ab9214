"""test-discovery judges from the Job and its JobResult alone (docs/ARCHITECTURE.md).

The executor hands back the report, the whole output and the claim plugin's
import and trace records; ``read`` needs nothing else, so it judges the same
after the sandbox and the run directory are gone (a remote executor's case).
Remembering the trace record for mutation and ``--dry-run`` is the engine's.
"""

from __future__ import annotations

import json
import os
import pickle
import shutil
import sys
from pathlib import Path

import anyio
import pytest
from adapter_helpers import adapter_context
from browser_helpers import make_plan
from grounding_helpers import PACKAGE, write_tree
from prove_helpers import git, make_change, prove_json

from changeloop.executors.job import Job
from changeloop.executors.local import LocalExecutor
from changeloop.grounding.citations import last_record, record_path
from changeloop.model import Provider
from changeloop.outcome import Outcome
from changeloop.providers import test_discovery

REPORT = ".changeloop/reports/test.xml"


def _provider(report: str | None = REPORT) -> Provider:
    argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    if report is not None:
        argv.append(f"--junitxml={report}")
    return Provider(
        name="test",
        adapter="test-discovery",
        capability="test",
        repository="self",
        command=tuple(argv),
        report=report,
        entry_points=("pkg/api.py::create_*",),
    )


def _statuses(outcomes: list[Outcome]) -> dict[str, tuple[str, dict[str, str]]]:
    return {o.capability: (o.status, dict(o.claims)) for o in outcomes}


def test_read_needs_only_the_job_and_its_result(tmp_path: Path) -> None:
    project = write_tree(tmp_path / "project", dict(PACKAGE))
    provider = _provider()
    claims = {"c-grounded": ["test"], "c-ungrounded": ["test"]}
    plan = make_plan(project, providers={"test": provider}, claims=claims)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    ctx = adapter_context(plan, provider, workdirs={"self": project}, run_dir=run_dir)
    job = test_discovery.prepare(ctx)
    assert isinstance(job, Job)
    job = pickle.loads(pickle.dumps(job))  # the job as a remote executor would get it
    result = anyio.run(LocalExecutor(dict(os.environ)).run, job)
    assert result.report is not None and result.stdout is not None
    assert any(n.startswith("imports/") for n in result.files), sorted(result.files)
    assert any(n.startswith("grounding/record-") for n in result.files), sorted(result.files)
    assert (run_dir / "report.xml").is_file()  # keep_report: the masked copy for people
    here = test_discovery.read(job, result)

    shutil.rmtree(project)
    shutil.rmtree(run_dir)
    elsewhere = test_discovery.read(job, result)

    assert _statuses(elsewhere) == _statuses(here)
    status, marks = _statuses(here)["test"]
    assert status == "pass"
    assert marks["c-grounded"] == "credited"
    assert (
        marks["c-ungrounded"] == "uncredited"
    )  # it ran core directly: ungrounded (docs/grounding.md)
    kinds = {f.kind for o in here for f in o.findings}
    assert "ungrounded" in kinds and "imported-from-outside" not in kinds
    assert _statuses(here)["discovery"][0] == "pass"
    assert [c["test"] for c in here[0].citations["c-grounded"]] == [
        "tests.test_values::test_grounded"
    ]


def test_output_as_report_is_read_from_the_result(tmp_path: Path) -> None:
    """unittest writes its verdict to stderr: the whole log comes back in the result."""
    project = write_tree(tmp_path / "project", {"test_x.py": UNITTEST})
    provider = Provider(
        name="test",
        adapter="test-discovery",
        capability="test",
        repository="self",
        command=(sys.executable, "-m", "unittest", "-v", "test_x"),
        format="unittest",
    )
    plan = make_plan(project, providers={"test": provider})
    ctx = adapter_context(plan, provider, workdirs={"self": project}, run_dir=tmp_path / "run")
    job = test_discovery.prepare(ctx)
    assert isinstance(job, Job)
    result = anyio.run(LocalExecutor(dict(os.environ)).run, job)
    assert result.log is not None and b"test_one" in result.log
    result.log_path.unlink()
    assert result.stdout_path is not None
    result.stdout_path.unlink()
    test, discovery = test_discovery.read(job, result)
    assert (test.status, test.tests and test.tests.passed) == ("pass", 2)
    assert discovery.status == "pass"


UNITTEST = """
import unittest


class T(unittest.TestCase):
    def test_one(self):
        self.assertEqual(1, 1)

    def test_two(self):
        self.assertTrue(True)
"""

EVIDENCE = """
version: 3
claims:
  c-grounded: {requires: [test]}
"""
EXECUTION = """
version: 1
repositories:
  self:
    entryPoints: ["pkg/api.py::create_*"]
providers:
  test:
    adapter: test-discovery
    command: [python3, -m, pytest, -q, -p, no:cacheprovider, --junitxml=.changeloop/r.xml]
    report: .changeloop/r.xml
"""


def test_prove_remembers_the_trace_record_for_the_change(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    files = dict(PACKAGE)
    files[".gitignore"] = ".changeloop/\n__pycache__/\n"
    root = write_tree(tmp_path / "ws", files)
    make_change(root, "ground", EVIDENCE, EXECUTION)
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-q", "-m", "init")
    assert not record_path(root, "ground", "self").exists()
    code, doc = prove_json(root, "ground", capsys=capsys)
    assert code == 0, json.dumps(doc)
    traced = last_record(root, "ground", "self")
    assert traced is not None
    grounded = traced["tests/test_values.py::test_grounded"]
    assert list(grounded["claims"]) == ["c-grounded"] and grounded["grounding"] == "grounded"

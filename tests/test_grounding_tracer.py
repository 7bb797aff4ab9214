"""Every grounding value, traced for real in a project's own pytest, on 3.11 (sys.settrace)
and on 3.12/3.13 (sys.monitoring); a tracer failure still lets the suite finish."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from grounding_helpers import (
    EXPECTED,
    PACKAGE,
    copy_project,
    dump,
    groundings,
    make_venv,
    run_traced,
    this_python,
)


@pytest.fixture(scope="module", params=["3.11", "3.12", "3.13"])
def python(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> str:
    if request.param == "3.11":
        return this_python()
    return make_venv(tmp_path_factory.mktemp("venvs"), request.param)


def test_every_grounding_value(python: str, tmp_path: Path) -> None:
    project = copy_project(tmp_path)
    proc, record, report = run_traced(python, project, tmp_path / "run")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert groundings(report) == EXPECTED, dump(record)
    # uncited tests run untraced and carry nothing
    uncited = next(c for c in report.tests if c.name == "test_uncited")
    assert uncited.citations == ()
    assert not any("test_uncited" in k for k in record)
    # depth and ref travel with their citation
    grounded = next(c for c in report.tests if c.name == "test_grounded")
    assert (grounded.citations[0].depth, grounded.citations[0].ref) == ("unit", "JIRA-1")
    # the record names the production functions run under the entry point
    functions = {tuple(f[:2]) for f in record["tests/test_values.py::test_grounded"]["functions"]}
    assert functions == {("pkg/api.py", "create_thing"), ("pkg/core.py", "double")}
    assert record["tests/test_values.py::test_ungrounded"]["functions"] == []


def test_entry_point_that_hands_off_is_still_grounded(python: str, tmp_path: Path) -> None:
    """dispatched only when no entry point ran (DESIGN.md §13)."""
    files = dict(PACKAGE)
    files["tests/test_values.py"] = (
        "import pytest\nfrom pkg import core\n\n"
        "@pytest.mark.claim('c')\ndef test_entry_hands_off():\n"
        "    assert core.in_thread(4) == 8\n"
    )
    project = copy_project(tmp_path, files)
    proc, record, report = run_traced(python, project, tmp_path / "run", ("pkg/core.py::in_*",))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert groundings(report) == {"test_entry_hands_off": "grounded"}, dump(record)


def test_no_entry_points_is_not_checked_with_its_own_reason(python: str, tmp_path: Path) -> None:
    project = copy_project(tmp_path)
    proc, _, report = run_traced(python, project, tmp_path / "run", ())
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert set(groundings(report).values()) == {"not-checked"}
    reasons = {c.reason for case in report.tests for c in case.citations}
    assert reasons == {
        "no entry points declared for repository 'self' "
        "(execution.yaml repositories.self.entryPoints)"
    }


BLOCKER = """
import sys

# Occupy what the tracer needs: the trace hook (3.11) or every monitoring tool id (3.12+).
if hasattr(sys, "monitoring"):
    for tool in range(6):
        try:
            sys.monitoring.use_tool_id(tool, "blocker")
        except ValueError:
            pass
else:
    def _other_tracer(frame, event, arg):
        return None

    sys.settrace(_other_tracer)
"""


def test_tracer_failure_finishes_the_suite_as_not_checked(python: str, tmp_path: Path) -> None:
    files = dict(PACKAGE)
    files["tests/conftest.py"] = BLOCKER
    project = copy_project(tmp_path, files)
    proc, _, report = run_traced(python, project, tmp_path / "run")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert report.counts.passed == 6  # the whole suite ran
    assert set(groundings(report).values()) == {"not-checked"}
    reasons = {c.reason for case in report.tests for c in case.citations}
    assert len(reasons) == 1
    reason = reasons.pop() or ""
    assert reason.startswith("the tracer failed: ")
    assert "no entry points" not in reason


WORKER_TEST = """
import queue
import sys
import threading

import pytest

from pkg import core

jobs = queue.Queue()
results = queue.Queue()


def _serve():
    while True:
        results.put(core.double(jobs.get()))


threading.Thread(target=_serve, daemon=True).start()  # started before any test is traced


@pytest.mark.claim("c")
def test_hands_work_to_a_running_worker():
    jobs.put(21)
    assert results.get(timeout=10) == 42
"""


def test_work_on_a_pre_started_thread_is_never_inert(python: str, tmp_path: Path) -> None:
    """Partial evidence withholds the positive answer: sys.monitoring sees the other thread
    run production code (dispatched); sys.settrace cannot see it (not-checked)."""
    files = dict(PACKAGE)
    files["tests/test_values.py"] = WORKER_TEST
    project = copy_project(tmp_path, files)
    proc, record, report = run_traced(python, project, tmp_path / "run")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    value = groundings(report)["test_hands_work_to_a_running_worker"]
    assert value in {"dispatched", "not-checked"}, dump(record)
    monitoring = subprocess.run(
        [python, "-c", "import sys; print(hasattr(sys, 'monitoring'))"],
        capture_output=True, text=True, check=True,
    ).stdout.strip() == "True"  # fmt: skip
    assert value == ("dispatched" if monitoring else "not-checked")


def test_a_child_process_is_a_hand_off_never_inert(python: str, tmp_path: Path) -> None:
    files = dict(PACKAGE)
    files["tests/test_values.py"] = (
        "import subprocess, sys\nimport pytest\n\n"
        "@pytest.mark.claim('c', depth='e2e')\ndef test_runs_a_child():\n"
        "    out = subprocess.run([sys.executable, '-c', 'from pkg import api; "
        "print(api.create_thing(2))'], capture_output=True, text=True, check=True)\n"
        "    assert out.stdout.strip() == '4'\n"
    )
    project = copy_project(tmp_path, files)
    proc, record, report = run_traced(python, project, tmp_path / "run")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert groundings(report) == {"test_runs_a_child": "dispatched"}, dump(record)

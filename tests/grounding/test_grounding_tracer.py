"""Every grounding value, traced for real in a project's own pytest, on 3.11 (sys.settrace,
sys.setprofile beside another tracer) and on 3.12/3.13 (sys.monitoring); a tracer failure
still lets the suite finish."""

from __future__ import annotations

import subprocess
import textwrap
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
    proc, record, _ = run_traced(python, project, tmp_path / "run")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert groundings(record) == EXPECTED, dump(record)
    # uncited tests run untraced and carry nothing
    assert not any("test_uncited" in k for k in record)
    # depth and ref travel with their citation, in the record the adapter reads
    grounded = record["tests/test_values.py::test_grounded"]
    assert grounded["claims"] == {"c-grounded": {"depth": "unit", "ref": "JIRA-1"}}
    assert grounded["junit"] == ["tests.test_values", "test_grounded"]
    # the record names the production functions run under the entry point
    functions = {tuple(f[:2]) for f in grounded["functions"]}
    assert functions == {("pkg/api.py", "create_thing"), ("pkg/core.py", "double")}
    assert record["tests/test_values.py::test_ungrounded"]["functions"] == []
    # what a value rests on: the file the structural test read; nothing for assert True
    assert record["tests/test_values.py::test_structural"]["reads"] == ["opened pkg/schema.json"]
    assert "reads" not in record["tests/test_values.py::test_inert"]
    # reached_outside_entry where it can be seen, omitted (never null) where it cannot
    reached = {
        k.rsplit("::")[-1]: v.get("reached_outside_entry", "omitted") for k, v in record.items()
    }
    assert reached == {
        "test_grounded": False,
        "test_ungrounded": True,
        "test_inert": False,
        "test_structural": False,
        "test_dispatched": "omitted",
    }


READS = """
import importlib
import sys

import pytest

import pkg.api
from pkg import api
from pkg.api import create_thing


@pytest.mark.claim("c", depth="unit")
def test_refers_to_an_entry_point_by_name():
    assert callable(create_thing)


@pytest.mark.claim("c", depth="unit")
def test_refers_to_a_module_attribute():
    assert "create_thing" in dir(api)


@pytest.mark.claim("c", depth="unit")
def test_imports_a_production_module_in_the_test():
    sys.modules.pop("pkg.core", None)
    core = importlib.import_module("pkg.core")
    assert core.__name__ == "pkg.core"


@pytest.mark.claim("c", depth="unit")
def test_touches_nothing_in_a_module_that_imports_production():
    assert 2 + 2 == 4


@pytest.mark.claim("c", depth="unit")
def test_a_branch_that_never_ran_is_no_read():
    if sys.maxsize < 0:
        assert api.create_thing(1) == 2
    assert True
"""


def test_inert_needs_a_read_the_tracer_saw(python: str, tmp_path: Path) -> None:
    """inert: the test read the production artifact (by name, a file, an import) and ran
    none of it; a test that did neither is untouched, even where production is imported."""
    files = dict(PACKAGE)
    files["tests/test_values.py"] = READS
    project = copy_project(tmp_path, files)
    proc, record, _ = run_traced(python, project, tmp_path / "run")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert groundings(record) == {
        "test_refers_to_an_entry_point_by_name": "inert",
        "test_refers_to_a_module_attribute": "inert",
        "test_imports_a_production_module_in_the_test": "inert",
        "test_touches_nothing_in_a_module_that_imports_production": "untouched",
        "test_a_branch_that_never_ran_is_no_read": "untouched",
    }, dump(record)
    reads = {k.rsplit("::")[-1]: v.get("reads") for k, v in record.items()}
    assert reads["test_refers_to_an_entry_point_by_name"] == ["referenced pkg.api.create_thing"]
    assert reads["test_refers_to_a_module_attribute"] == ["referenced module pkg.api"]
    assert "imported pkg/core.py" in (reads["test_imports_a_production_module_in_the_test"] or [])


FIXTURES = """
import pytest

from pkg import api, core


@pytest.fixture(autouse=True)
def warm_cache():
    api.create_thing(0)  # every test of this module runs an entry point in its setup
    yield


@pytest.mark.claim("c", depth="unit")
def test_only_setup_touched_the_entry_point():
    assert True


@pytest.mark.claim("c", depth="unit")
def test_calls_the_entry_point_itself():
    assert api.create_thing(2) == 4


@pytest.mark.claim("c", depth="unit")
def test_also_runs_code_no_entry_point_reached():
    assert api.create_thing(2) == 4
    assert core.double(5) == 10
"""


def test_an_autouse_fixture_grounds_through_setup_and_says_so(python: str, tmp_path: Path) -> None:
    files = dict(PACKAGE)
    files["tests/test_values.py"] = FIXTURES
    project = copy_project(tmp_path, files)
    proc, record, _ = run_traced(python, project, tmp_path / "run")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    by_name = {k.rsplit("::")[-1]: v for k, v in record.items()}
    assert {n: v["grounding"] for n, v in by_name.items()} == dict.fromkeys(by_name, "grounded")
    assert by_name["test_only_setup_touched_the_entry_point"]["groundedBy"] == "fixture warm_cache"
    assert "groundedBy" not in by_name["test_calls_the_entry_point_itself"]
    outside = {n: v["reached_outside_entry"] for n, v in by_name.items()}
    assert outside == {
        "test_only_setup_touched_the_entry_point": False,
        "test_calls_the_entry_point_itself": False,
        "test_also_runs_code_no_entry_point_reached": True,
    }, dump(record)


OTHER_TOOLS = """
import sys

for tool in (4, 2):  # another monitoring tool holds every id but one
    sys.monitoring.use_tool_id(tool, "another-tool")
"""


def test_outside_entry_is_seen_with_a_single_free_monitoring_tool_id(
    python: str, tmp_path: Path
) -> None:
    """Without a second tool id to watch direct calls, nothing is disabled that could still
    show a call outside the entry points: the values equal those with both ids."""
    if python == this_python():
        pytest.skip("sys.monitoring exists on 3.12+ only; 3.11 runs the settrace tracer")
    files = dict(PACKAGE)
    files["tests/test_values.py"] = FIXTURES
    files["conftest.py"] = OTHER_TOOLS
    project = copy_project(tmp_path, files)
    proc, record, _ = run_traced(python, project, tmp_path / "run")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    by_name = {k.rsplit("::")[-1]: v for k, v in record.items()}
    assert {n: v["grounding"] for n, v in by_name.items()} == dict.fromkeys(by_name, "grounded")
    outside = {n: v["reached_outside_entry"] for n, v in by_name.items()}
    assert outside == {
        "test_only_setup_touched_the_entry_point": False,
        "test_calls_the_entry_point_itself": False,
        "test_also_runs_code_no_entry_point_reached": True,
    }, dump(record)


def test_lines_are_recorded_when_asked(python: str, tmp_path: Path) -> None:
    project = copy_project(tmp_path)
    proc, record, _ = run_traced(python, project, tmp_path / "run", lines=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    grounded = record["tests/test_values.py::test_grounded"]
    # pkg/api.py: `return core.double(n)` (line 4); pkg/core.py: `return n * 2` (line 4)
    assert grounded["lines"] == {"pkg/api.py": [4], "pkg/core.py": [4]}, dump(record)
    assert record["tests/test_values.py::test_inert"]["lines"] == {}
    # not asked: not recorded
    _, plain, _ = run_traced(python, copy_project(tmp_path), tmp_path / "run2")
    assert "lines" not in plain["tests/test_values.py::test_grounded"]


def test_entry_point_that_hands_off_is_still_grounded(python: str, tmp_path: Path) -> None:
    """dispatched only when no entry point ran."""
    files = dict(PACKAGE)
    files["tests/test_values.py"] = (
        "import pytest\nfrom pkg import core\n\n"
        "@pytest.mark.claim('c', depth='unit')\ndef test_entry_hands_off():\n"
        "    assert core.in_thread(4) == 8\n"
    )
    project = copy_project(tmp_path, files)
    proc, record, _ = run_traced(python, project, tmp_path / "run", ("pkg/core.py::in_*",))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert groundings(record) == {"test_entry_hands_off": "grounded"}, dump(record)


def test_no_entry_points_is_not_checked_with_its_own_reason(python: str, tmp_path: Path) -> None:
    project = copy_project(tmp_path)
    proc, record, _ = run_traced(python, project, tmp_path / "run", ())
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert set(groundings(record).values()) == {"not-checked"}
    assert {r["reason"] for r in record.values()} == {
        "no entry points declared for repository 'self' "
        "(execution.yaml repositories.self.entryPoints)"
    }


BLOCKER = """
import sys

# Occupy what the tracer needs: the trace and profile hooks (3.11) or every monitoring
# tool id (3.12+).
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
    sys.setprofile(_other_tracer)
"""


def test_tracer_failure_finishes_the_suite_as_not_checked(python: str, tmp_path: Path) -> None:
    files = dict(PACKAGE)
    files["tests/conftest.py"] = BLOCKER
    project = copy_project(tmp_path, files)
    proc, record, report = run_traced(python, project, tmp_path / "run")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert report.counts.passed == 6  # the whole suite ran
    assert set(groundings(record).values()) == {"not-checked"}
    reasons = {r["reason"] for r in record.values()}
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


@pytest.mark.claim("c", depth="unit")
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
    proc, record, _ = run_traced(python, project, tmp_path / "run")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    value = groundings(record)["test_hands_work_to_a_running_worker"]
    monitoring = subprocess.run(
        [python, "-c", "import sys; print(hasattr(sys, 'monitoring'))"],
        capture_output=True, text=True, check=True,
    ).stdout.strip() == "True"  # fmt: skip
    assert value == ("dispatched" if monitoring else "not-checked"), dump(record)


def test_a_child_process_is_a_hand_off_never_inert(python: str, tmp_path: Path) -> None:
    files = dict(PACKAGE)
    files["tests/test_values.py"] = textwrap.dedent(
        """\
        import subprocess, sys
        import pytest

        @pytest.mark.claim('c', depth='e2e')
        def test_runs_a_child():
            out = subprocess.run([sys.executable, '-c', 'from pkg import api; '
                                  'print(api.create_thing(2))'],
                                 capture_output=True, text=True, check=True)
            assert out.stdout.strip() == '4'
        """
    )
    project = copy_project(tmp_path, files)
    proc, record, _ = run_traced(python, project, tmp_path / "run")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert groundings(record) == {"test_runs_a_child": "dispatched"}, dump(record)
    # e2e is recorded as smoke, its alias
    assert record["tests/test_values.py::test_runs_a_child"]["claims"] == {"c": {"depth": "smoke"}}

"""The plan carries its YAML marks: preflight points at lines without re-reading the files.

Before, preflight parsed evidence.yaml and execution.yaml a second time to
recover line numbers, so a file edited (or removed) between building the plan
and checking it moved every location, or lost it.
"""

from __future__ import annotations

from pathlib import Path

from config_helpers import plan_for

from changeloop.preflight import check

EXECUTION = """\
version: 1
providers:
  lint:
    command: [ruff]
    dependsOn:
      - build
"""


def test_preflight_uses_the_marks_the_plan_carries(tmp_path: Path) -> None:
    plan = plan_for(tmp_path, execution=EXECUTION)
    assert plan.execution is not None
    # The file changes after the plan was built: the plan's marks still tell.
    plan.execution.path.write_text("# rewritten\n" * 20 + EXECUTION, encoding="utf-8")
    [problem] = [p for p in check(plan) if p.code == "unknown_dependency"]
    assert problem.location is not None
    assert problem.location.path.endswith("execution.yaml")
    assert problem.location.line == 6


def test_preflight_works_when_the_files_are_gone(tmp_path: Path) -> None:
    plan = plan_for(tmp_path, execution=EXECUTION)
    assert plan.execution is not None
    plan.execution.path.unlink()
    [problem] = [p for p in check(plan) if p.code == "unknown_dependency"]
    assert problem.location is not None and problem.location.line == 6

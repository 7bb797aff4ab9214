"""Build real OpenSpec workspaces in tmp dirs for the config/plan/preflight tests."""

from __future__ import annotations

import textwrap
from pathlib import Path

import repo_helpers

from changeloop.model import Plan
from changeloop.plan import build_plan
from changeloop.workspace.changeref import ChangeRef
from changeloop.workspace.discovery import find_change

VALID_EVIDENCE = """\
version: 3
requires: [test]
claims:
  greeting:
    statement: The app greets.
    requires: [test]
"""

VALID_EXECUTION = """\
version: 1
providers:
  test:
    adapter: test-discovery
    command: [python, -m, pytest, -q]
    report: reports/junit.xml
  lint:
    adapter: command
    command: [ruff, check]
    dependsOn: [test]
services:
  web:
    command: [python, -m, http.server, "4173"]
    readiness:
      url: http://127.0.0.1:4173/
      expect: {body: hello}
"""


def git_init(path: Path) -> None:
    repo_helpers.make_repo(path, commit=False)


def make_workspace(
    root: Path,
    change: str = "demo",
    evidence: str | None = VALID_EVIDENCE,
    execution: str | None = None,
    git: bool = True,
) -> ChangeRef:
    """A workspace at ``root`` with one change; returns its ChangeRef."""
    if git:
        git_init(root)
    (root / "openspec" / "specs").mkdir(parents=True, exist_ok=True)
    change_dir = root / "openspec" / "changes" / change
    change_dir.mkdir(parents=True, exist_ok=True)
    if evidence is not None:
        (change_dir / "evidence.yaml").write_text(textwrap.dedent(evidence), encoding="utf-8")
    if execution is not None:
        (change_dir / "execution.yaml").write_text(textwrap.dedent(execution), encoding="utf-8")
    return find_change(root, change)


def plan_for(root: Path, evidence: str = VALID_EVIDENCE, execution: str | None = None) -> Plan:
    ref = make_workspace(root, evidence=evidence, execution=execution)
    return build_plan(root.resolve(), ref)

"""Preflight's answer as ``evidence doctor`` findings (docs/bootstrap.md).

Example::

    preflight_findings(root, change, evidence, execution, derived)
    # [PreflightFinding("preflight-refused", "…/execution.yaml:4:14: provider 'test' uses
    #   unknown adapter 'comand' …", "use one of the known adapters", None,
    #   code="unknown_adapter", path="…/execution.yaml", line=4, column=14)]

The plan is built exactly as ``cli/prove_plan.load_plan`` builds it (same derived
wiring rule), so doctor and prove never disagree about what is refused.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from changeloop import preflight
from changeloop.detect.doctor.finding import DoctorFinding
from changeloop.errors import ChangeloopError, Problem
from changeloop.model import Evidence, Execution, Provider
from changeloop.plan import build_plan

REFUSED = "preflight-refused"
WARNED = "preflight-warning"
# The workspace's own git state is prove's to refuse, not a finding about the change:
# doctor answers for a change's configuration and tools, in a git work tree or not.
WORKSPACE_STATE = frozenset({"git_refused", "not_a_git_worktree"})


@dataclass(frozen=True)
class PreflightFinding(DoctorFinding):
    """A DoctorFinding that also says where: prove's error code, file, line and column."""

    code: str | None = None
    path: str | None = None
    line: int | None = None
    column: int | None = None

    def to_json(self) -> dict[str, Any]:
        out = super().to_json()
        for key in ("code", "path", "line", "column"):
            value = getattr(self, key)
            if value is not None:
                out[key] = value
        return out


def preflight_findings(
    root: Path,
    change: Any,
    evidence: Evidence,
    execution: Execution | None,
    derived: Mapping[str, Provider],
) -> list[DoctorFinding]:
    """Every refusal of prove's preflight, as an unresolved (severity error) finding,
    and each of its located warnings (severity warning, not counted)."""
    try:
        plan = build_plan(root, change, derived=dict(derived), config=(evidence, execution))
        problems = preflight.check(plan)
    except ChangeloopError as exc:
        problems = [p for p in exc.problems if p.code not in WORKSPACE_STATE]
        return [_finding(p, default=evidence.path) for p in problems]
    problems = [p for p in problems if p.code not in WORKSPACE_STATE]
    out: list[DoctorFinding] = [_finding(p, default=evidence.path) for p in problems]
    warned = preflight.located_warnings(plan)
    return out + [_finding(w, default=evidence.path, severity="warning") for w in warned]


def _finding(problem: Problem, *, default: Path, severity: str = "error") -> PreflightFinding:
    where = problem.location
    path = where.path if where is not None else str(default)
    return PreflightFinding(
        REFUSED if severity == "error" else WARNED,
        dataclasses.replace(problem, fix=None).render(),  # "file:line:col: message"
        problem.fix or "correct it as the message says, then run `changeloop evidence doctor`",
        # No command: the fix is an edit, and an editor is not a command a user (or an
        # agent running every playbook_command) can paste and be done.
        None,
        severity=severity,
        code=problem.code,
        path=path,
        line=where.line if where is not None else None,
        column=where.column if where is not None else None,
    )

"""Coverage and the tracer coexist: pytest-cov on 3.11 (sys.settrace, the tracer moves to
sys.setprofile) and on 3.12/3.13 (sys.monitoring beside coverage's tracer, or beside its own
sys.monitoring core); under declared entry points a citation no tracer could observe is
never credit (grounding-unavailable)."""

from __future__ import annotations

import base64
import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from grounding_helpers import EXPECTED, PACKAGE, copy_project, dump, groundings, make_venv
from grounding_helpers import run_traced as traced_run
from prove_helpers import git, make_change, prove_json


@pytest.fixture(scope="module", params=["3.11", "3.12", "3.13"])
def python(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> str:
    return make_venv(tmp_path_factory.mktemp("venvs"), request.param, "pytest-cov")


def _version(python: str) -> tuple[int, int]:
    out = subprocess.run(
        [python, "-c", "import sys; print(*sys.version_info[:2])"],
        capture_output=True, text=True, check=True,
    ).stdout.split()  # fmt: skip
    return int(out[0]), int(out[1])


def _covered(project: Path) -> dict[str, Any]:
    doc = json.loads((project / "cov.json").read_text())
    return {name: sorted(f["executed_lines"]) for name, f in doc["files"].items()}


COV = ("--cov=pkg", "--cov-report=json:cov.json")


@pytest.mark.parametrize("core", ["default", "sysmon"])
def test_groundings_under_pytest_cov(python: str, core: str, tmp_path: Path) -> None:
    version = _version(python)
    if core == "sysmon" and version < (3, 12):
        pytest.skip("coverage's sys.monitoring core exists on 3.12+ only (its default here)")
    env = {"COVERAGE_CORE": core} if core == "sysmon" else {}
    project = copy_project(tmp_path)
    proc, record, _ = traced_run(python, project, tmp_path / "run", extra=COV, env_extra=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    expected = dict(EXPECTED)
    if version < (3, 12):
        # coverage holds sys.settrace: calls are seen through sys.setprofile, the test's own
        # lines are not, so "it read nothing" cannot be told and is not claimed
        expected["test_inert"] = "not-checked"
        reason = record["tests/test_values.py::test_inert"]["reason"]
        assert reason.startswith("reads cannot be seen: another trace function"), reason
    assert groundings(record) == expected, dump(record)
    traced_coverage = _covered(project)
    # coverage measured the same lines with the tracer as without it
    plain = subprocess.run(
        [python, "-m", "pytest", "-q", "-p", "no:cacheprovider", *COV],
        cwd=project, capture_output=True, text=True, check=False,
        env={**{k: v for k, v in os.environ.items() if not k.startswith("CHANGELOOP_")}, **env},
    )  # fmt: skip
    assert plain.returncode == 0, plain.stdout + plain.stderr
    assert _covered(project) == traced_coverage
    assert traced_coverage["pkg/api.py"] == [1, 3, 4]


EVIDENCE = """
version: 3
claims:
  c-grounded: {requires: [test]}
  c-inert: {requires: [test]}
  c-structural: {requires: [test], archetype: structural}
"""
EXECUTION = """
version: 1
repositories:
  self:
    entryPoints: ["pkg/api.py::create_*"]
providers:
  test:
    adapter: test-discovery
    command: [{python}, -m, pytest, -q, -p, no:cacheprovider, --cov=pkg, --junitxml=.changeloop/r.xml]
    report: .changeloop/r.xml
"""


def test_prove_under_cov_credits_no_unobserved_citation(
    python: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`assert True` never proves a behavioral claim, with or without coverage's tracer."""
    files = dict(PACKAGE)
    files[".gitignore"] = ".changeloop/\n__pycache__/\n.coverage\n"
    root = copy_project(tmp_path, files)
    make_change(root, "cov", EVIDENCE, EXECUTION.format(python=json.dumps(python)))
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-q", "-m", "init")
    code, doc = prove_json(root, "cov", capsys=capsys)
    assert code == 1
    status = {cid: c["status"] for cid, c in doc["claims"].items()}
    assert status == {
        "c-grounded": "proven",
        "c-inert": "inconclusive",
        "c-structural": "proven",
    }
    envelope = json.loads((root / ".changeloop/receipts/cov/test.test.json").read_text())
    ext = json.loads(base64.b64decode(envelope["payload"]))["predicate"]["changeloop"]
    kinds = {f["kind"] for f in ext["findings"]}
    if _version(python) < (3, 12):
        assert "grounding-unavailable" in kinds, ext["findings"]
        assert ext["citations"]["c-inert"][0]["grounding"] == "not-checked"
    else:
        assert "ungrounded" in kinds, ext["findings"]
        assert ext["citations"]["c-inert"][0]["grounding"] == "untouched"

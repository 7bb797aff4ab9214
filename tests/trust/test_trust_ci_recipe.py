"""The merge check the docs recommend holds against the pull request that swaps CI's key.

``examples/ci/prove-and-sign.yml``'s pull-request job and the CI step of
``docs/verbs/gate.md`` are read as written: they never hold a signing key, they gate
``--trust-from`` the base branch, and their gate command — run by a real shell in a
fresh clone of the hostile pull request (tests/anchor_helpers.py) — says not proven.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from anchor_helpers import CHANGE, base_and_pull_request
from repo_paths import REPO_ROOT

WORKFLOW = REPO_ROOT / "examples" / "ci" / "prove-and-sign.yml"
GATE_DOC = REPO_ROOT / "docs" / "verbs" / "gate.md"


def _pull_request_job() -> dict[str, Any]:
    workflow = yaml.safe_load(WORKFLOW.read_text())
    [job] = [j for j in workflow["jobs"].values() if "pull_request" in j["if"]]
    found: dict[str, Any] = job
    return found


def _runs(steps: list[dict[str, Any]]) -> list[str]:
    return [str(step["run"]) for step in steps if "run" in step]


def _doc_merge_check() -> str:
    text = GATE_DOC.read_text()
    section = text[text.index("## CI step (merge check)") :]
    [block] = re.findall(r"```yaml\n(.*?)```", section, re.DOTALL)
    return str(block)


def test_no_signing_key_is_in_reach_of_a_pull_request() -> None:
    job = _pull_request_job()
    text = json.dumps(job)
    assert "--sign-key" not in text and "secrets." not in text and "environment" not in job
    assert "--sign-key" not in _doc_merge_check()


def test_the_merge_check_trusts_the_base_branch() -> None:
    job = _pull_request_job()
    gates = [r for r in _runs(job["steps"]) if "changeloop gate" in r]
    assert gates and all("--trust-from" in g for g in gates)
    checkout = next(
        s for s in job["steps"] if str(s.get("uses", "")).startswith("actions/checkout")
    )
    assert checkout["with"]["fetch-depth"] == 0  # the base branch is there to read
    assert "changeloop gate" in _doc_merge_check() and "--trust-from" in _doc_merge_check()


def test_the_recipes_gate_says_not_proven_for_the_hostile_pull_request(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    attack = base_and_pull_request(tmp_path, capsys)
    job = _pull_request_job()
    [gate] = [r for r in _runs(job["steps"]) if "changeloop gate" in r]
    temp = tmp_path / "runner-temp"
    temp.mkdir()
    bin_dir = Path(sys.executable).parent  # the changeloop console script of this venv
    env = {
        **os.environ,
        "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
        "CHANGE": CHANGE,
        "BASE": str(job["env"]["BASE"]).replace("${{ github.base_ref }}", "main"),
        "RUNNER_TEMP": str(temp),
    }
    proc = subprocess.run(
        ["bash", "-eo", "pipefail", "-c", gate],
        cwd=attack.clone,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert proc.returncode == 1, proc.stderr
    doc = json.loads((temp / "gate.json").read_text())
    assert doc["status"] == "not-proven"
    assert doc["trust"]["source"] == "rev" and doc["trust"]["rev"] == "origin/main"
    assert [c["field"] for c in doc["trust"]["changed"]] == ["ci.publicKey"]

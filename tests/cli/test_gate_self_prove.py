"""changeloop proves itself: `.ci/run` runs scripts/self-prove.sh after the suite."""

from __future__ import annotations

import base64
import json
import os
import re
import subprocess

import pytest
from repo_paths import REPO_ROOT

from changeloop.cli.main import main
from changeloop.workspace.discovery import list_changes

REPO = REPO_ROOT
SCRIPT = REPO / "scripts" / "self-prove.sh"
NEW = (
    "add-gate-verb",
    "add-change-summary",
    "add-quality-lanes",
    "add-tool-contracts",
    "grounded-citations",
)


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def test_own_changes_for_this_work_exist_with_wiring() -> None:
    own = {c.id for c in list_changes(REPO)}
    assert set(NEW) <= own
    for change in NEW:
        directory = REPO / "openspec" / "changes" / change
        assert (directory / "evidence.yaml").is_file() and (directory / "execution.yaml").is_file()


@pytest.mark.parametrize("change", NEW)
def test_own_change_wires_this_work_s_tests(
    change: str, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    assert main(["prove", change, "--root", str(REPO), "--dry-run", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    test = next(p for p in doc["providers"] if p["name"] == "test")
    assert any(re.match(r"tests/(\w+/)?test_", part) for part in test["command"])


def test_ci_runs_the_self_proof_after_the_suite() -> None:
    ci = (REPO / ".ci" / "run").read_text()
    script = (REPO / "scripts" / "test.sh").read_text()
    assert "CHANGELOOP_SELF_PROVE=1" in ci and "exec bash scripts/test.sh" in ci
    suite = script.index("python3 -m pytest -n")
    assert script.index("scripts/self-prove.sh", suite) > suite
    assert "exec python3 -m pytest" not in script  # the self-proof must run after it


@pytest.mark.slow
@pytest.mark.timeout(900)  # signed with a fresh key: nothing is reused from the cache
def test_self_prove_proves_and_gates_an_own_change() -> None:
    proc = subprocess.run(
        ["bash", str(SCRIPT), "add-change-summary"],
        capture_output=True,
        text=True,
        env=_env(),
        check=False,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "change add-change-summary: PROVEN" in proc.stderr
    assert "adapters check: examples/node-vitest" in proc.stderr


def test_self_prove_fails_when_the_change_is_not_proven() -> None:
    proc = subprocess.run(
        ["bash", str(SCRIPT), "no-such-change"],
        capture_output=True,
        text=True,
        env=_env(),
        check=False,
        timeout=120,
    )
    assert proc.returncode == 1
    assert "could not prove its own change no-such-change" in proc.stderr


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_the_self_proof_is_cited_grounded_and_signed() -> None:
    """The default change is proven by its tests' own citations, each with a depth and
    grounded against changeloop's own entry points, signed, gated, verified; nothing is
    credited by a provider listing claims."""
    execution = (REPO / "openspec/changes/grounded-citations/execution.yaml").read_text()
    assert "claims:" not in execution and "entryPoints:" in execution
    proc = subprocess.run(
        ["bash", str(SCRIPT)], capture_output=True, text=True, env=_env(), check=False,
        timeout=900,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "change grounded-citations: PROVEN" in proc.stderr
    assert "valid: sha256:" in proc.stderr  # receipt verify, with the signing key
    envelope = json.loads(
        (REPO / ".changeloop/receipts/grounded-citations/test.test.json").read_text()
    )
    ext = json.loads(base64.b64decode(envelope["payload"]))["predicate"]["changeloop"]
    cites = [c for found in ext["citations"].values() for c in found]
    assert len(cites) >= 8
    assert {c["grounding"] for c in cites} == {"grounded"}
    assert {c["depth"] for c in cites} == {"unit"}
    assert set(ext["claims"].values()) == {"credited"}

"""examples/ci/ci-execution.yaml, run as the recipe says: CI proves main, the developer imports."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from repo_paths import REPO_ROOT
from test_trust_wiring import CHANGE, GOOD, TEST, ci_proves, git, prove

from changeloop.cli.main import main

EXAMPLE = REPO_ROOT / "examples" / "ci" / "ci-execution.yaml"
EVIDENCE = """\
version: 3
claims:
  greeting:
    statement: The app greets.
    requires: [ci-test]
"""


def _workspace(path: Path, key_dir: Path) -> Path:
    path.mkdir(parents=True)
    git(path, "init", "-q", "-b", "main")
    (path / "greet.py").write_text(GOOD)
    (path / "test_greet.py").write_text(TEST)
    (path / ".gitignore").write_text("__pycache__/\n.pytest_cache/\n")
    change = path / "openspec" / "changes" / CHANGE
    change.mkdir(parents=True)
    (change / "evidence.yaml").write_text(EVIDENCE)
    shutil.copyfile(EXAMPLE, change / "execution.yaml")
    shutil.copyfile(key_dir / "changeloop.pub", change / "ci.pub")
    git(path, "add", "-A")
    git(path, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init")
    return path


def test_the_ci_example_accepts_main_and_refuses_a_rewired_pull_request(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    keys = tmp_path / "ci-keys"
    assert main(["keygen", "--out", str(keys)]) == 0
    ws = _workspace(tmp_path / "dev", keys)
    made = ci_proves(tmp_path, ws, keys / "changeloop.key", rewire=None)
    assert main(["receipt", "import", *map(str, made), "--change", CHANGE, "--root", str(ws)]) == 0
    code, doc = prove(ws, capsys)
    [ci] = [p for p in doc["providers"] if p["name"] == "ci-test"]
    assert code == 0 and ci["receipts"][0]["status"] == "pass", doc

    for old in (ws / "openspec" / "changes" / CHANGE / "receipts").glob("*.json"):
        old.unlink()
    shutil.rmtree(tmp_path / "ci-checkout")
    rewired = ci_proves(
        tmp_path,
        ws,
        keys / "changeloop.key",
        rewire="[python3, -m, pytest, -q, -p, no:cacheprovider]\n    env: {X: '1'}",
    )
    assert (
        main(["receipt", "import", *map(str, rewired), "--change", CHANGE, "--root", str(ws)]) == 0
    )
    code, doc = prove(ws, capsys)
    assert code == 1
    reason = next(r for p in doc["providers"] if p["name"] == "ci-test" for r in p["receipts"])
    assert "wiring" in reason["reason"]

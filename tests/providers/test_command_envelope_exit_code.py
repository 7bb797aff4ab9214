"""Review finding: a runner envelope whose own exit_code is non-zero never passes."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from changeloop.cli.main import main


def test_envelope_with_a_failing_exit_code_but_passed_true_is_a_fail(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / "env.json").write_text(
        json.dumps({"exit_code": 3, "passed": True, "findings": []}) + "\n"
    )
    change = tmp_path / "openspec" / "changes" / "c1"
    change.mkdir(parents=True)
    (change / "evidence.yaml").write_text("version: 3\nrequires: [lint]\n")
    (change / "execution.yaml").write_text(
        "version: 1\nproviders:\n  lint:\n    adapter: command\n    envelope: true\n"
        "    command: [cat, env.json]\n"
    )
    capsys.readouterr()
    assert main(["--root", str(tmp_path), "prove", "c1", "--json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    (receipt,) = [r for p in doc["providers"] for r in p["receipts"]]
    assert receipt["status"] == "fail" and "exit_code 3" in receipt["reason"]

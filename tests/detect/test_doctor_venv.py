"""doctor names a linter the repository's own virtualenv lacks, and stops once it is there."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from prove_helpers import make_change, make_repo

from changeloop.cli.main import main


def test_linter_missing_from_the_repository_virtualenv(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = make_repo(tmp_path / "ws", {"pyproject.toml": "[tool.ruff]\nline-length = 100\n"})
    venv = root / ".venv"
    site = venv / "lib" / "python3.11" / "site-packages"
    site.mkdir(parents=True)
    (venv / "bin").mkdir()
    os.symlink(sys.executable, venv / "bin" / "python")
    (venv / "pyvenv.cfg").write_text(f"home = {Path(sys.executable).parent}\n")
    make_change(root, "c1", "version: 3\nrequires: [static-analysis]\n")

    capsys.readouterr()
    assert main(["evidence", "doctor", "c1", "--root", str(root), "--json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    missing = [f for f in doc["findings"] if f["kind"] == "tool-missing"]
    assert missing and "ruff" in missing[0]["message"]
    assert missing[0]["playbook_command"] == ".venv/bin/python -m pip install ruff"

    (site / "ruff-0.6.0.dist-info").mkdir()
    assert main(["evidence", "doctor", "c1", "--root", str(root), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["unresolved"] == 0

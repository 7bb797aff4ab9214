"""A project whose `npm test` runs a runner changeloop cannot read is told to keep it, not replace it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from prove_helpers import make_change, make_repo

from changeloop.cli.main import main


def test_unreadable_npm_test_script_is_kept_as_a_command(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    package = {"name": "x", "scripts": {"test": "xo && ava && tsd"}}
    root = make_repo(tmp_path / "ws", {"package.json": json.dumps(package)})
    make_change(root, "c1", "version: 3\nrequires: [test]\n")
    capsys.readouterr()
    assert main(["evidence", "doctor", "c1", "--root", str(root), "--json"]) == 1
    finding = json.loads(capsys.readouterr().out)["findings"][0]
    assert finding["kind"] == "missing-adapter"
    assert "xo && ava && tsd" in finding["suggested_action"]
    assert "npm test" in finding["suggested_action"]
    # the exact text to add, no editor and no install of another runner
    assert finding["playbook_command"] is None
    assert finding["edit"]["path"].endswith("execution.yaml")
    assert "command: [npm, test]" in finding["edit"]["add"]


def test_missing_runner_is_installed_by_the_lock_files_package_manager(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    package = {"name": "x", "devDependencies": {"vitest": "^4.1.2"}}
    root = make_repo(
        tmp_path / "ws",
        {"package.json": json.dumps(package), "pnpm-lock.yaml": "lockfileVersion: '9.0'\n"},
    )
    make_change(root, "c1", "version: 3\nrequires: [test]\n")
    capsys.readouterr()
    assert main(["evidence", "doctor", "c1", "--root", str(root), "--json"]) == 1
    findings = json.loads(capsys.readouterr().out)["findings"]
    missing = [f for f in findings if f["kind"] == "tool-missing"]
    # pnpm itself may be absent: then it runs through npx (the pasted command must work)
    expected = (
        "pnpm install --frozen-lockfile"
        if shutil.which("pnpm")
        else "npx -y pnpm install --frozen-lockfile"
    )
    assert missing and missing[0]["playbook_command"] == expected

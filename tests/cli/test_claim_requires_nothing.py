"""A claim with ``requires: []`` can never be proven: it is a load error, not an unproven run.

It used to load, then ``prove`` said unproven and ``doctor`` said everything was fine.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import repo_helpers

from changeloop.cli.main import main

EVIDENCE = """\
version: 3
requires: [static-analysis]
claims:
  greeting:
    statement: A person is greeted by their trimmed name.
    requires: []
"""


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    change = "openspec/changes/add-greeting"
    return repo_helpers.basic_example(tmp_path / "ws", {f"{change}/evidence.yaml": EVIDENCE})


@pytest.mark.parametrize(
    "argv",
    [["prove", "add-greeting"], ["evidence", "doctor", "add-greeting"], ["gate", "add-greeting"]],
)
def test_empty_claim_requires_is_refused_with_file_and_line(
    ws: Path, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    capsys.readouterr()
    code = main([*argv, "--root", str(ws), "--json"])
    captured = capsys.readouterr()
    assert code == 2, captured.err
    [error] = json.loads(captured.out)["errors"]
    assert error["message"] == "claims.greeting.requires must name at least one capability"
    assert error["path"] == "openspec/changes/add-greeting/evidence.yaml"
    assert error["line"] == 6
    assert "requires: [test]" in error["fix"]
    assert not (ws / ".changeloop" / "runs").exists()


def test_a_claim_without_requires_still_loads(ws: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (ws / "openspec/changes/add-greeting/evidence.yaml").write_text(
        EVIDENCE.replace("    requires: []\n", "")
    )
    capsys.readouterr()
    assert main(["prove", "add-greeting", "--root", str(ws), "--dry-run", "--json"]) == 0

"""The fix for a missing evidence.yaml is one that works when followed to the letter.

It used to say "or run `changeloop evidence init <id>`", and ``evidence init <id>
--write`` then failed with the same error. Now it shows the file to write.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
import repo_helpers

from changeloop.cli.main import main


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    change = "openspec/changes/add-greeting"
    # a change with its proposal only
    gone = (f"{change}/evidence.yaml", f"{change}/execution.yaml")
    return repo_helpers.basic_example(tmp_path / "ws", remove=gone)


@pytest.mark.parametrize(
    "argv",
    [
        ["prove", "add-greeting", "--dry-run"],
        ["evidence", "init", "add-greeting", "--write"],
        ["evidence", "doctor", "add-greeting"],
    ],
)
def test_following_the_fix_makes_the_verb_work(
    ws: Path, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    capsys.readouterr()
    assert main([*argv, "--root", str(ws), "--json"]) == 2
    [error] = json.loads(capsys.readouterr().out)["errors"]
    assert error["code"] == "evidence_missing"
    assert error["path"] == "openspec/changes/add-greeting/evidence.yaml"
    fix = error["fix"]
    assert "evidence init" not in fix  # init cannot create it: it needs it
    head, _, example = fix.partition("\n")
    assert "openspec/changes/add-greeting/evidence.yaml" in head
    example = textwrap.dedent(example)
    assert len(example.strip().splitlines()) == 3 and "version: 3" in example

    (ws / "openspec/changes/add-greeting/evidence.yaml").write_text(example)
    assert main([*argv, "--root", str(ws), "--json"]) in (0, 1)  # it loads now
    doc = json.loads(capsys.readouterr().out)
    assert "errors" not in doc, doc


def test_the_human_text_shows_the_example_indented_under_fix(
    ws: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    assert main(["prove", "add-greeting", "--root", str(ws)]) == 2
    err = capsys.readouterr().err
    assert "fix: create openspec/changes/add-greeting/evidence.yaml" in err
    assert "\n      version: 3\n" in err

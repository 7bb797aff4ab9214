"""A schema refusal says what is accepted and how to fix it, in the file's terms.

jsonschema's own words ("is not valid under any of the given schemas", "0 is
less than the minimum of 1", "should be non-empty") used to reach the user with
no fix.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import repo_helpers

from changeloop.cli.main import main

CHANGE = "openspec/changes/add-greeting"
JARGON = ("is not valid under", "less than the minimum", "non-empty", "is too short")


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    return repo_helpers.basic_example(tmp_path / "ws")


def _refusal(ws: Path, capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, object]:
    capsys.readouterr()
    assert main([*argv, "--root", str(ws), "--json"]) == 2
    [error] = json.loads(capsys.readouterr().out)["errors"]
    assert isinstance(error, dict)
    assert error.get("fix"), error
    assert not any(word in str(error["message"]) for word in JARGON), error
    return error


def _edit(ws: Path, name: str, old: str, new: str) -> None:
    path = ws / CHANGE / name
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))


def test_a_string_where_a_list_or_mapping_is_accepted(
    ws: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _edit(ws, "evidence.yaml", "requires: [static-analysis]", "requires: static-analysis")
    error = _refusal(ws, capsys, "prove", "add-greeting")
    assert error["line"] == 3
    assert error["message"] == ("requires must be a list or a mapping, not a string")
    assert "requires: [static-analysis]" in str(error["fix"])


def test_a_number_below_its_minimum(ws: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _edit(ws, "execution.yaml", "timeoutMs: 60000", "timeoutMs: 0")
    error = _refusal(ws, capsys, "prove", "add-greeting")
    assert error["line"] == 8
    assert error["message"] == "providers.test.timeoutMs must be at least 1, not 0"
    assert "at least 1" in str(error["fix"])


def test_a_number_above_its_maximum(ws: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _edit(ws, "execution.yaml", "timeoutMs: 60000", "timeoutMs: 60000\n    threshold: 1.5")
    (ws / CHANGE / "execution.yaml").write_text(
        (ws / CHANGE / "execution.yaml")
        .read_text()
        .replace("adapter: command", "adapter: mutation", 1)
    )
    error = _refusal(ws, capsys, "prove", "add-greeting")
    assert error["message"] == "providers.test.threshold must be at most 1, not 1.5"


def test_a_max_age_that_is_neither_seconds_nor_a_duration(
    ws: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _edit(ws, "execution.yaml", "timeoutMs: 60000", "timeoutMs: 60000\n    maxAge: soon")
    error = _refusal(ws, capsys, "prove", "add-greeting")
    assert "providers.test.maxAge must be" in str(error["message"])
    assert "7d" in str(error["fix"])


def test_empty_lanes(ws: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (ws / "quality").mkdir()
    (ws / "quality/foundation-quality.json").write_text('{"version": 1, "lanes": {}}')
    error = _refusal(ws, capsys, "quality", "run", "--change", "add-greeting")
    assert error["message"] == "lanes must have at least one entry"
    assert "lanes" in str(error["fix"]) and "command" in str(error["fix"])


def test_empty_list_of_a_lane(ws: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (ws / "quality").mkdir()
    (ws / "quality/foundation-quality.json").write_text(
        '{"version": 1, "lanes": {"lint": {"command": []}}}'
    )
    error = _refusal(ws, capsys, "quality", "run", "--change", "add-greeting")
    assert error["message"] == "lanes.lint.command must have at least one item"

"""Small user-facing answers an audit found wrong: a refusal's status, an empty list
to choose from, a file where a directory belongs, a path said twice."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import repo_helpers

from changeloop.cli.main import main


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    return repo_helpers.basic_example(tmp_path / "ws")


def test_adapters_check_of_an_unknown_change_is_refused_not_drift(
    ws: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    assert main(["adapters", "check", "--change", "nope", "--root", str(ws), "--json"]) == 2
    doc = json.loads(capsys.readouterr().out)
    assert doc["status"] == "refused" and doc["errors"][0]["code"] == "unknown_change"


def test_report_run_with_no_run_recorded_says_how_to_make_one(
    ws: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    assert main(["report", "add-greeting", "--run", "nope", "--root", str(ws), "--json"]) == 2
    [error] = json.loads(capsys.readouterr().out)["errors"]
    assert error["code"] == "unknown_run"
    assert "no run is recorded yet" in error["message"]
    assert "above" not in error["fix"]
    assert "changeloop prove add-greeting" in error["fix"]


def test_report_run_unknown_among_recorded_runs_lists_them(
    ws: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["prove", "add-greeting", "--root", str(ws)]) == 0
    capsys.readouterr()
    assert main(["report", "add-greeting", "--run", "nope", "--root", str(ws), "--json"]) == 2
    [error] = json.loads(capsys.readouterr().out)["errors"]
    assert "newest:" in error["message"] and "above" in error["fix"]


def test_import_into_a_receipts_file_says_it_is_a_file(
    ws: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["keygen", "--out", str(tmp_path / "keys")]) == 0
    key = tmp_path / "keys" / "changeloop.key"
    signed = tmp_path / "r.json"
    argv = ["receipt", "sign", "--root", str(ws), "--change", "add-greeting"]
    argv += ["--claims", "greeting", "--key", str(key), "--issuer", "ci", "--out", str(signed)]
    assert main(argv) == 0
    receipts = ws / "openspec/changes/add-greeting/receipts"
    receipts.write_text("not a directory\n")
    capsys.readouterr()
    argv = ["receipt", "import", str(signed), "--change", "add-greeting", "--root", str(ws)]
    code = main([*argv, "--public-key", str(tmp_path / "keys" / "changeloop.pub"), "--json"])
    assert code == 1
    errors = json.loads(capsys.readouterr().out)["errors"]
    assert errors[0]["code"] == "receipts_not_a_directory"
    assert "is a file, not a directory" in errors[0]["message"]
    assert errors[0]["path"] == "openspec/changes/add-greeting/receipts"
    assert receipts.read_text() == "not a directory\n"


def test_keygen_over_an_existing_key_names_the_path_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["keygen", "--out", str(tmp_path / "keys")]) == 0
    capsys.readouterr()
    assert main(["keygen", "--out", str(tmp_path / "keys")]) == 2
    [line] = [x for x in capsys.readouterr().err.splitlines() if x.startswith("error:")]
    assert line.count(str(tmp_path / "keys" / "changeloop.key")) == 1, line
    assert "already exists" in line


def test_broken_quality_json_names_the_file_once_with_its_position(
    ws: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (ws / "quality").mkdir()
    (ws / "quality/foundation-quality.json").write_text('{"version": 1,\n}')
    capsys.readouterr()
    assert main(["quality", "run", "--change", "add-greeting", "--root", str(ws)]) == 2
    [line] = [x for x in capsys.readouterr().err.splitlines() if x.startswith("error:")]
    assert line.count("quality/foundation-quality.json") == 1, line
    assert line.startswith("error: quality/foundation-quality.json:2:1 is not valid JSON"), line

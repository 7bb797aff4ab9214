"""Review findings: a report of the right syntax but the wrong shape is unreadable, not a crash."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from changeloop.cli.main import main
from changeloop.runner_reports import read_report
from changeloop.runner_reports.playwright_json import read as read_playwright

WRONG_SHAPES = [
    ("playwright", {"suites": [{"title": "a", "specs": 5}]}),
    ("playwright", {"suites": [{"title": "a", "specs": [{"title": "x", "tests": 7}]}]}),
    ("playwright", {"suites": [], "errors": 3}),
    ("playwright", {"suites": [{"title": "a", "suites": 9}]}),
    (
        "jest",
        {
            "numTotalTests": 1,
            "success": True,
            "testResults": [{"status": "passed", "assertionResults": 3}],
        },
    ),
    (
        "vitest",
        {
            "numTotalTests": 1,
            "success": True,
            "testResults": [{"status": "passed", "assertionResults": 3}],
        },
    ),
    (
        "pytest-json",
        {
            "tests": [{"nodeid": 1, "outcome": None, "setup": 5}],
            "summary": {"collected": "x"},
            "collectors": 5,
        },
    ),
]


@pytest.mark.parametrize(("fmt", "doc"), WRONG_SHAPES)
def test_wrong_shape_is_unreadable(tmp_path: Path, fmt: str, doc: object) -> None:
    report = tmp_path / "report.json"
    report.write_text(json.dumps(doc))
    result = read_report(report, fmt)
    assert result.counts is None and result.error
    if fmt == "playwright":
        assert read_playwright(report).counts is None


def test_wrong_shape_report_through_prove_is_a_fail_with_its_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    change = root / "openspec" / "changes" / "c1"
    change.mkdir(parents=True)
    (change / "evidence.yaml").write_text(
        "version: 3\nclaims:\n  greet:\n    statement: hi\n    requires: [test]\n"
    )
    (root / "mk.sh").write_text(
        'echo \'{"suites":[{"title":"a","specs":5}]}\' > rep.json\nexit 1\n'
    )
    (change / "execution.yaml").write_text(
        "version: 1\nproviders:\n  test:\n    adapter: test-discovery\n"
        "    command: [sh, mk.sh]\n    report: rep.json\n    format: playwright\n"
    )
    capsys.readouterr()
    assert main(["--root", str(root), "prove", "c1", "--json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    test = next(r for p in doc["providers"] for r in p["receipts"] if r["capability"] == "test")
    assert test["status"] == "fail"
    assert "crashed" not in test["reason"]


def test_evidence_json_refusal_names_the_root_it_found(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    change = tmp_path / "openspec" / "changes" / "c1"
    change.mkdir(parents=True)
    (change / "evidence.yaml").write_text("version: 9\n")
    for verb in ("detect", "init", "doctor"):
        capsys.readouterr()
        assert main(["--root", str(tmp_path), "evidence", verb, "c1", "--json"]) == 2
        doc = json.loads(capsys.readouterr().out)
        assert doc["root"] == str(tmp_path.resolve()) and doc["errors"]

"""evidence init: a readable preview; --write adds high-confidence wiring and keeps the rest."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from bootstrap_helpers import CHANGE, cli, workspace

EXISTING = """\
version: 1
# the team's lint, tuned by hand
providers:
  static-analysis:
    adapter: command
    command: [make, lint]   # keep this comment
"""


def test_preview_writes_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = workspace(tmp_path, {"pytest.ini": "[pytest]\n"})
    code, _, err = cli(capsys, "evidence", "init", CHANGE, "--root", str(root))
    assert code == 0
    assert not (root / f"openspec/changes/{CHANGE}/execution.yaml").exists()
    assert "+++ b/execution.yaml" in err and "+  test:" in err
    assert "--junitxml=.changeloop/reports/test.xml" in err
    assert "Next steps:" in err


def test_write_keeps_existing_providers_and_comments(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = workspace(
        tmp_path,
        {"pytest.ini": "[pytest]\n"},
        evidence="version: 3\nrequires: [test, static-analysis]\n",
        execution=EXISTING,
    )
    code, doc, _ = cli(capsys, "evidence", "init", CHANGE, "--write", "--json", "--root", str(root))
    assert doc is not None
    assert code == 0 and doc["written"] is True and doc["added"] == ["test"]
    text = (root / f"openspec/changes/{CHANGE}/execution.yaml").read_text()
    assert text.startswith(EXISTING)
    assert "# derived by `changeloop evidence init` from pytest.ini [pytest]" in text
    assert doc["unresolved"] == []
    # the file is valid wiring and a second run adds nothing
    code, doc, _ = cli(capsys, "evidence", "init", CHANGE, "--write", "--json", "--root", str(root))
    assert doc is not None
    assert doc["added"] == [] and doc["written"] is False
    assert (root / f"openspec/changes/{CHANGE}/execution.yaml").read_text() == text


def test_low_confidence_is_not_written_and_unresolved_is_listed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = workspace(
        tmp_path,
        {"tests/test_a.py": "import pytest\n"},
        evidence="version: 3\nrequires: [test, review]\n",
    )
    code, doc, _err = cli(
        capsys, "evidence", "init", CHANGE, "--write", "--json", "--root", str(root)
    )
    assert doc is not None
    assert code == 0 and doc["added"] == [] and doc["written"] is False
    assert doc["skipped"] == [
        {"provider": "test", "reason": "low confidence (tests/test_a.py import)"}
    ]
    assert {(u["capability"], u["repository"]) for u in doc["unresolved"]} == {
        ("test", "self"),
        ("review", "self"),
    }
    # each says what resolves it: a command to paste, or the exact text to add (no editor)
    assert all(u["next"] or u["edit"]["add"] for u in doc["unresolved"])
    assert not (root / f"openspec/changes/{CHANGE}/execution.yaml").exists()


def test_written_file_loads_and_plans(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = workspace(tmp_path, {"package.json": '{"devDependencies": {"vitest": "3.2.4"}}'})
    cli(capsys, "evidence", "init", CHANGE, "--write", "--root", str(root))
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    code = subprocess.run(
        ["changeloop", "prove", CHANGE, "--dry-run", "--json", "--root", str(root)],
        check=False,
        capture_output=True,
        text=True,
    )
    assert code.returncode == 0, code.stderr
    assert '"origin": "configured"' in code.stdout

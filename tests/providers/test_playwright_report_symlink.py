"""Review finding: a playwright report path leading out of the repository through a symlink."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from changeloop.cli.main import main

REPORT = json.dumps(
    {
        "suites": [
            {
                "title": "a.spec.ts",
                "file": "a.spec.ts",
                "specs": [
                    {
                        "title": "t",
                        "file": "a.spec.ts",
                        "tests": [
                            {
                                "projectName": "chromium",
                                "expectedStatus": "passed",
                                "status": "expected",
                                "annotations": [{"type": "claim", "description": "greet"}],
                                "results": [{"status": "passed", "duration": 5}],
                            }
                        ],
                    }
                ],
            }
        ],
        "errors": [],
        "stats": {"expected": 1},
    }
)


def test_symlinked_report_outside_the_repository_is_a_fail_and_touches_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root, outside = tmp_path / "ws", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (outside / "e2e.json").write_text("precious\n")
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (root / "out").symlink_to(outside)
    (root / "pw.sh").write_text(f"cat > \"$PLAYWRIGHT_JSON_OUTPUT_NAME\" <<'J'\n{REPORT}\nJ\n")
    change = root / "openspec" / "changes" / "c1"
    change.mkdir(parents=True)
    (change / "evidence.yaml").write_text(
        "version: 3\nclaims:\n  greet:\n    statement: hi\n    requires: [browser]\n"
    )
    (change / "execution.yaml").write_text(
        "version: 1\nproviders:\n  browser:\n    adapter: playwright\n"
        "    command: [sh, pw.sh]\n    report: out/e2e.json\n"
    )
    capsys.readouterr()
    assert main(["--root", str(root), "prove", "c1", "--json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    (receipt,) = [r for p in doc["providers"] for r in p["receipts"]]
    assert receipt["status"] == "fail" and "outside the repository" in receipt["reason"]
    assert (outside / "e2e.json").read_text() == "precious\n"

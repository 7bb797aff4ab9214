"""The pytest claim plugin: strict markers accept it; JUnit and JSON carry every id."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from changeloop.runner_reports import read_report


def test_claim_marker_under_strict_markers_reaches_junit_and_json(tmp_path: Path) -> None:
    (tmp_path / "test_a.py").write_text(
        "import pytest\n\n"
        "@pytest.mark.claim('one')\n@pytest.mark.claim('two', 'three')\n"
        "def test_x():\n    pass\n"
    )
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "--strict-markers",
            "-q",
            "--junitxml=r.xml",
            "--json-report",
            "--json-report-file=r.json",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert read_report(tmp_path / "r.xml").credited_claims() == ("one", "three", "two")
    doc = json.loads((tmp_path / "r.json").read_text())
    assert sorted(doc["tests"][0]["metadata"]["claims"]) == ["one", "three", "two"]
    assert read_report(tmp_path / "r.json").credited_claims() == ("one", "three", "two")

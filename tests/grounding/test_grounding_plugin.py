"""The claim marker's depth= and ref=: validated, and written next to their claim."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from changeloop.runner_reports import read_report


def _pytest(tmp_path: Path, body: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "test_a.py").write_text("import pytest\n\n" + body)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "--junitxml=r.xml"],
        cwd=tmp_path, capture_output=True, text=True, check=False,
    )  # fmt: skip


def test_unknown_depth_is_a_usage_error_naming_the_test(tmp_path: Path) -> None:
    proc = _pytest(tmp_path, "@pytest.mark.claim('c', depth='deep')\ndef test_x():\n    pass\n")
    assert proc.returncode != 0
    out = proc.stdout + proc.stderr
    assert "test_a.py::test_x" in out and "depth='deep'" in out and "unit" in out


def test_unknown_keyword_is_a_usage_error(tmp_path: Path) -> None:
    proc = _pytest(tmp_path, "@pytest.mark.claim('c', level='unit')\ndef test_x():\n    pass\n")
    assert proc.returncode != 0
    assert "depth= and ref=, not level=" in proc.stdout + proc.stderr


def test_depth_and_ref_per_claim_closest_marker_wins(tmp_path: Path) -> None:
    proc = _pytest(
        tmp_path,
        "pytestmark = pytest.mark.claim('a', depth='e2e')\n\n"
        "@pytest.mark.claim('a', depth='unit', ref='JIRA-1')\n"
        "@pytest.mark.claim('b', ref='JIRA-2')\n"
        "def test_x():\n    pass\n",
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = read_report(tmp_path / "r.xml")
    (case,) = report.tests or ()
    cites = {c.claim: (c.depth, c.ref, c.grounding) for c in case.citations}
    # outside changeloop (no grounding config) nothing is traced and no grounding is written
    assert cites == {"a": ("unit", "JIRA-1", None), "b": (None, "JIRA-2", None)}
    assert report.credited_claims() == ("a", "b")

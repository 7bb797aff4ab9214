"""The report page in real Chromium: no console error, no request, statuses as text, the
timeline's bars, a reason revealed by keyboard focus, and no serious axe-core violation
(light and dark colour schemes). Also takes the screenshot of examples/web's report that
docs/verbs/report.md shows (written to docs/ when CHANGELOOP_UPDATE_SCREENSHOTS=1).
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from browser_helpers import CHROMIUM, EXAMPLE_WEB, require_browser
from port_helpers import free_port
from prove_helpers import git
from report_helpers import CHANGE, workspace

from changeloop.cli.main import main

pytestmark = pytest.mark.browser

REPO = Path(__file__).resolve().parent.parent
DRIVER = REPO / "tests" / "report_browser"
SCREENSHOT = REPO / "docs" / "report-web.png"
DEMO_SCREENSHOT = REPO / "docs" / "report-demo.png"


def _require() -> None:
    require_browser()
    if not (DRIVER / "node_modules" / "axe-core").is_dir():
        reason = f"report browser test needs {DRIVER}/node_modules (run `npm ci` there)"
        if os.environ.get("CHANGELOOP_REQUIRE_BROWSER") == "1":
            pytest.fail(reason)
        pytest.skip(reason)


def _drive(page: Path, out: Path, screenshot: Path | None = None) -> dict[str, Any]:
    argv = ["node", str(DRIVER / "check.js"), str(page), str(out)]
    if screenshot is not None:
        argv.append(str(screenshot))
    env = {
        **os.environ,
        "PLAYWRIGHT_DIR": str(EXAMPLE_WEB / "node_modules"),
        "CHROMIUM": str(CHROMIUM),
    }
    done = subprocess.run(
        argv, cwd=DRIVER, env=env, capture_output=True, text=True, timeout=180, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result: dict[str, Any] = json.loads(out.read_text())
    return result


def _serious(visit: dict[str, Any]) -> list[dict[str, Any]]:
    return [v for v in visit["axe"] if v["impact"] in ("serious", "critical")]


def _report(root: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> Path:
    capsys.readouterr()
    assert main(["report", CHANGE, "--root", str(root), *extra]) == 0
    return root / capsys.readouterr().out.strip()


def test_report_page_in_chromium(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _require()
    root = workspace(tmp_path)
    assert main(["prove", CHANGE, "--root", str(root), "--jobs", "2"]) == 1
    assert main(["prove", CHANGE, "--root", str(root), "--jobs", "2"]) == 1  # unit cached
    page = _report(root, capsys)
    shot = tmp_path / "report-demo.png"
    result = _drive(page, tmp_path / "out.json", shot)
    if os.environ.get("CHANGELOOP_UPDATE_SCREENSHOTS") == "1":
        shutil.copyfile(shot, DEMO_SCREENSHOT)
    runs = [json.loads(p.read_text()) for p in (root / ".changeloop/runs").glob("*/run.json")]
    latest = max(runs, key=lambda r: r["startedOn"])
    ran = sorted(name for name, p in latest["providers"].items() if p["state"] == "ran")
    assert latest["providers"]["unit"]["state"] == "cached"
    for scheme in ("light", "dark"):
        visit = result[scheme]
        assert visit["consoleErrors"] == [], scheme
        assert visit["requests"] == [], scheme
        cells = {(c["claim"], c["capability"]): c["text"] for c in visit["cells"]}
        assert cells == {
            ("greeting", "test"): "✓ proven",
            ("lint-clean", "static-analysis"): "✗ failed",
            ("reviewed", "test"): "✓ proven",
            ("reviewed", "review"): "? inconclusive",
        }
        assert all(c["hiddenDetail"] for c in visit["cells"])  # until focused or hovered
        assert sorted(b["provider"] for b in visit["bars"]) == ran == ["lint"]
        focused = visit["focused"]
        assert focused is not None and focused["visible"], "Tab never reached the failed cell"
        assert "provider lint fail" in focused["text"]
        assert "signed by issuer local" in focused["text"]
        assert _serious(visit) == [], visit["axe"]
    # With JavaScript off the page is whole and keyboard focus still reveals the reason.
    plain = result["noScript"]
    assert plain["consoleErrors"] == [] and plain["requests"] == []
    assert [c["text"] for c in plain["cells"]] == [c["text"] for c in result["light"]["cells"]]
    assert plain["focused"] is not None and plain["focused"]["visible"]
    assert "provider lint fail" in plain["focused"]["text"]


def test_tampered_receipt_reads_not_verified_in_chromium(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _require()
    root = workspace(tmp_path)
    main(["prove", CHANGE, "--root", str(root), "--jobs", "2"])
    receipt = root / ".changeloop" / "receipts" / CHANGE / "unit.test.json"
    envelope = json.loads(receipt.read_text())
    statement = json.loads(base64.b64decode(envelope["payload"]))
    statement["predicate"]["changeloop"]["claims"]["lint-clean"] = "credited"
    envelope["payload"] = base64.b64encode(json.dumps(statement).encode()).decode()
    receipt.write_text(json.dumps(envelope))
    result = _drive(_report(root, capsys), tmp_path / "out.json")
    cells = {(c["claim"], c["capability"]): c["text"] for c in result["light"]["cells"]}
    assert cells[("greeting", "test")] == "⚠ not verified"
    assert cells[("reviewed", "test")] == "⚠ not verified"
    assert "✓ proven" not in cells.values()
    assert result["light"]["consoleErrors"] == []


def _copy_web(tmp: Path) -> Path:
    """examples/web as its own git repository, its service on a free port."""
    root = tmp / "web"
    shutil.copytree(
        EXAMPLE_WEB,
        root,
        ignore=shutil.ignore_patterns("node_modules", ".changeloop", "test-results"),
    )
    (root / "node_modules").symlink_to(EXAMPLE_WEB / "node_modules")
    port = str(free_port())
    execution = root / "openspec" / "changes" / "add-greeting" / "execution.yaml"
    execution.write_text(execution.read_text().replace("4173", port))
    # What the example's home repository ignores; Playwright writes test-results/ in the run.
    (root / ".gitignore").write_text(
        "node_modules\n.changeloop/\ntest-results/\nplaywright-report/\n"
    )
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "example")
    return root


@pytest.mark.slow
def test_examples_web_report_screenshot(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _require()
    root = _copy_web(tmp_path)
    capsys.readouterr()
    assert main(["prove", "add-greeting", "--root", str(root), "--report"]) == 0
    assert "report: .changeloop/report/add-greeting.html" in capsys.readouterr().err
    page = root / ".changeloop" / "report" / "add-greeting.html"
    shot = tmp_path / "report-web.png"
    result = _drive(page, tmp_path / "out.json", shot)
    visit = result["light"]
    assert visit["consoleErrors"] == [] and visit["requests"] == []
    assert {c["text"] for c in visit["cells"]} == {"✓ proven"}
    assert [b["provider"] for b in visit["bars"]] == ["browser"]
    assert _serious(visit) == [] and _serious(result["dark"]) == []
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    if os.environ.get("CHANGELOOP_UPDATE_SCREENSHOTS") == "1":
        shutil.copyfile(shot, SCREENSHOT)
    assert SCREENSHOT.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", "docs/report-web.png is checked in"

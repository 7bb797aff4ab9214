"""The report page in real Chromium: no console error, no request, statuses as text, the
timeline's bars, a reason revealed by keyboard focus, each non-proven cell's cause shown
without hover, and no axe-core violation at all — in light and dark colour schemes, at
desktop width and on a phone (390 px: the page never scrolls sideways, wide tables scroll
in their own box), and under the print stylesheet (details expanded, the verdict kept).
Screenshots are taken at desktop and phone width. Grounding labels are checked against
the receipts' own ``grounding`` for each value the tracer gives. Also takes the screenshot
of examples/web's report that docs/verbs/report.md shows (written to docs/ when
CHANGELOOP_UPDATE_SCREENSHOTS=1).
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from browser_helpers import CHROMIUM, EXAMPLE_WEB, require_browser
from port_helpers import free_port
from prove_helpers import git
from report_helpers import CHANGE, workspace

from changeloop.cli.main import main

pytestmark = pytest.mark.browser

REPO = Path(__file__).resolve().parents[2]
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


def _drive(
    page: Path, out: Path, screenshot: Path | None = None, phone: Path | None = None
) -> dict[str, Any]:
    argv = ["node", str(DRIVER / "check.js"), str(page), str(out)]
    if screenshot is not None:
        argv.append(str(screenshot))
        if phone is not None:
            argv.append(str(phone))
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


def _phone(screenshot: Path) -> Path:
    return screenshot.with_name(f"{screenshot.stem}-phone.png")


def _png_width(path: Path) -> int:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    return int.from_bytes(data[16:20], "big")


def _fits_a_phone(result: dict[str, Any]) -> None:
    """390 px: no sideways scroll of the page; a table wider than that scrolls in its box."""
    phone = result["phone"]["layout"]
    assert phone["viewport"] == 390 and phone["pageWidth"] <= 390, phone
    assert all(box["overflow"] == "auto" for box in phone["boxes"]), phone["boxes"]


def _prints(result: dict[str, Any]) -> None:
    """Print: every cell's details are expanded and the verdict keeps its colours."""
    printed = result["print"]
    assert printed["cells"] and not any(c["hiddenDetail"] for c in printed["cells"])
    verdict = printed["layout"]["verdict"]
    assert verdict["text"].startswith("Verdict: ") and verdict["display"] != "none"
    assert verdict["background"] not in ("rgba(0, 0, 0, 0)", "transparent"), verdict


def _no_violation(result: dict[str, Any]) -> None:
    for name in ("light", "dark", "phone", "print"):
        assert result[name]["axe"] == [], (name, result[name]["axe"])
        assert result[name]["consoleErrors"] == [] and result[name]["requests"] == [], name


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
    shot, phone = tmp_path / "report-demo.png", tmp_path / "report-demo-phone.png"
    result = _drive(page, tmp_path / "out.json", shot, phone)
    assert _png_width(shot) == 1280 and _png_width(phone) == 390
    _fits_a_phone(result)
    _prints(result)
    _no_violation(result)
    if os.environ.get("CHANGELOOP_UPDATE_SCREENSHOTS") == "1":
        shutil.copyfile(shot, DEMO_SCREENSHOT)
        shutil.copyfile(phone, _phone(DEMO_SCREENSHOT))
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
        causes = {(c["claim"], c["capability"]): c["cause"] for c in visit["cells"]}
        assert causes[("greeting", "test")] is None  # proven: nothing to explain
        assert "provider lint fail" in (causes[("lint-clean", "static-analysis")] or "")
        assert "cites claim reviewed" in (causes[("reviewed", "review")] or "")
        assert all(c["causeVisible"] for c in visit["cells"] if c["cause"])  # without hover
        assert sorted(b["provider"] for b in visit["bars"]) == ran == ["lint"]
        focused = visit["focused"]
        assert focused is not None and focused["visible"], "Tab never reached the failed cell"
        assert "provider lint fail" in focused["text"]
        assert "signed by issuer local" in focused["text"]
        assert visit["layout"]["next"], "a what-to-do-next section"
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
    cells = {(c["claim"], c["capability"]): c for c in result["light"]["cells"]}
    for key in (("greeting", "test"), ("reviewed", "test")):
        assert cells[key]["text"] == "∅ unproven"  # the claim states' own words
        assert cells[key]["cause"].startswith("not verified: ") and cells[key]["causeVisible"]
    assert "✓ proven" not in {c["text"] for c in cells.values()}
    assert result["light"]["consoleErrors"] == []
    _no_violation(result)


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
    page = root / ".changeloop" / "report" / "add-greeting.html"
    assert f"report: {page.absolute().as_uri()}" in capsys.readouterr().err
    shot, phone = tmp_path / "report-web.png", tmp_path / "report-web-phone.png"
    result = _drive(page, tmp_path / "out.json", shot, phone)
    visit = result["light"]
    assert {c["text"] for c in visit["cells"]} == {"✓ proven"}
    assert [b["provider"] for b in visit["bars"]] == ["browser"]
    # The service and its readiness probe are shown; Playwright credits name their tests.
    (service,) = visit["layout"]["services"]
    assert "service web: python3 -m http.server" in service
    assert "ready when http://127.0.0.1:" in service and "changeloop-example-web" in service
    credited = [s for c in visit["cells"] for s in c["subs"] if s.startswith("credited: ")]
    assert credited and all("cited by a passing test" not in s for s in credited), credited
    assert _png_width(shot) == 1280 and _png_width(phone) == 390
    _fits_a_phone(result)
    _prints(result)
    _no_violation(result)
    if os.environ.get("CHANGELOOP_UPDATE_SCREENSHOTS") == "1":
        shutil.copyfile(shot, SCREENSHOT)
        shutil.copyfile(phone, _phone(SCREENSHOT))
    assert SCREENSHOT.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", "docs/report-web.png is checked in"
    assert _png_width(_phone(SCREENSHOT)) == 390, "docs/report-web-phone.png is checked in"


GROUNDING_CHANGE = "add-things"
GROUNDING_EVIDENCE = """\
version: 3
claims:
  c-grounded: {statement: grounded, requires: [test]}
  c-ungrounded: {statement: ungrounded, requires: [test]}
  c-inert: {statement: inert, requires: [test]}
  c-structural: {statement: structural, archetype: structural, requires: [test]}
  c-dispatched: {statement: dispatched, requires: [test]}
"""


def _grounding_workspace(root: Path, *, entry_points: bool) -> Path:
    from grounding_helpers import ENTRY_POINTS, PACKAGE, write_tree

    write_tree(root, PACKAGE)
    repositories = (
        f"repositories:\n  self:\n    entryPoints: {list(ENTRY_POINTS)}\n" if entry_points else ""
    )
    execution = (
        f"version: 1\n{repositories}providers:\n  test:\n    adapter: test-discovery\n"
        f'    command: ["{sys.executable}", -m, pytest, -q, -p, no:cacheprovider,'
        " --junitxml=.changeloop/reports/test.xml]\n"
        "    report: .changeloop/reports/test.xml\n"
    )
    change = root / "openspec" / "changes" / GROUNDING_CHANGE
    change.mkdir(parents=True)
    (root / "openspec" / "specs").mkdir()
    (change / "evidence.yaml").write_text(GROUNDING_EVIDENCE)
    (change / "execution.yaml").write_text(execution)
    (root / ".gitignore").write_text(".changeloop/\n__pycache__/\nreport.xml\n")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "things")
    return root


def _receipt_groundings(root: Path) -> dict[str, str]:
    """claim -> the grounding its citation carries in the signed test receipt."""
    envelope = json.loads(
        (root / ".changeloop" / "receipts" / GROUNDING_CHANGE / "test.test.json").read_text()
    )
    ext = json.loads(base64.b64decode(envelope["payload"]))["predicate"]["changeloop"]
    return {claim: str(cites[0]["grounding"]) for claim, cites in ext["citations"].items()}


@pytest.fixture(scope="module")
def grounding_pages(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Both workspaces proven and reported once, each page driven once in Chromium."""
    _require()
    out: dict[str, Any] = {}
    for name, declared in (("traced", True), ("untraced", False)):
        base = tmp_path_factory.mktemp(name)
        root = _grounding_workspace(base / "ws", entry_points=declared)
        main(["prove", GROUNDING_CHANGE, "--root", str(root)])
        assert main(["report", GROUNDING_CHANGE, "--root", str(root)]) == 0
        page = root / ".changeloop" / "report" / f"{GROUNDING_CHANGE}.html"
        visit = _drive(page, base / "out.json")
        labels = {
            c["claim"]: next((s for s in c["subs"] if s.startswith("grounding: ")), None)
            for c in visit["light"]["cells"]
        }
        out[name] = {"receipt": _receipt_groundings(root), "labels": labels, "visit": visit}
    return out


@pytest.mark.parametrize(
    ("workspace_name", "claim", "grounding"),
    [
        ("traced", "c-grounded", "grounded"),
        ("traced", "c-ungrounded", "ungrounded"),
        ("traced", "c-inert", "untouched"),  # it neither ran nor read production code
        ("traced", "c-structural", "inert"),
        ("traced", "c-dispatched", "dispatched"),
        ("untraced", "c-grounded", "not-checked"),
    ],
)
def test_grounding_labels_say_what_the_receipt_says(
    grounding_pages: dict[str, Any], workspace_name: str, claim: str, grounding: str
) -> None:
    """Each cell's label is its receipt's ``grounding`` (every one read "grounded" before)."""
    pages = grounding_pages[workspace_name]
    assert pages["receipt"][claim] == grounding  # what the tracer recorded, signed
    # what else the citations say follows: "; 1 reached outside entry points"
    assert pages["labels"][claim].split(";")[0] == f"grounding: 1 {grounding}"
    _no_violation(pages["visit"])

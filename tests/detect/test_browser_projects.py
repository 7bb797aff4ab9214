"""A vitest workspace with a browser project: doctor checks its Chromium, and a run whose
browser part never reported says so.

The shape is a vitest workspace with a `unit` project and a `browser` project on
Playwright: without a Chromium the browser project never starts, vitest exits 1,
and its report lists only the unit tests — nothing failed, 16 tests silently
missing.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from bootstrap_helpers import CHANGE, cli, workspace
from prove_helpers import git, make_change, make_repo, prove_json, receipts_of

from changeloop.cli.main import main

WORKSPACE = """\
import { defineWorkspace } from "vitest/config";
export default defineWorkspace([
  { test: { name: "unit", exclude: ["browser/**", "**/node_modules/**"] } },
  {
    test: {
      include: ["browser/**/*.test.ts"],
      name: "browser",
      browser: {
        provider: "playwright",
        headless: true,
        enabled: true,
        instances: [{ browser: "chromium" }],
      },
    },
  },
]);
"""


def _browser_workspace(root: Path, config: str = WORKSPACE) -> Path:
    package = {
        "name": "w",
        "scripts": {"test": "vitest"},
        "devDependencies": {"vitest": "^3.2.4", "@vitest/browser": "^3.2.4", "playwright": "^1.56"},
    }
    root = workspace(
        root,
        {
            "package.json": json.dumps(package),
            "vitest.workspace.js": config,
            "src/a.test.ts": "import { test } from 'vitest'; test('a', () => {});\n",
            "browser/b.test.ts": "import { test } from 'vitest'; test('b', () => {});\n",
        },
    )
    for tool in ("vitest", "playwright"):
        binary = root / "node_modules" / ".bin" / tool
        binary.parent.mkdir(parents=True, exist_ok=True)
        binary.write_text("#!/bin/sh\nexit 0\n")
        binary.chmod(0o755)
    return root


@pytest.mark.skipif(shutil.which("chromium") is None, reason="no system Chromium to name")
def test_a_vitest_browser_project_needs_its_chromium(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _browser_workspace(tmp_path / "ws")
    monkeypatch.setenv("PLAYWRIGHT_BROWSERS_PATH", str(tmp_path / "no-browsers"))
    code, doc, _ = cli(capsys, "evidence", "doctor", CHANGE, "--json", "--root", str(root))
    assert code == 1 and doc is not None
    [finding] = [f for f in doc["findings"] if f["kind"] == "browsers-missing"]
    assert "vitest's browser project (vitest.workspace.js)" in finding["message"]
    assert finding["playbook_command"] == "npx playwright install chromium"
    chromium = shutil.which("chromium")
    assert finding["edit"]["path"] == "vitest.workspace.js"
    assert f"executablePath: '{chromium}'" in finding["edit"]["add"]
    assert chromium is not None and chromium in finding["suggested_action"]


def test_a_browser_project_with_its_own_chromium_is_resolved(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    own = WORKSPACE.replace(
        'instances: [{ browser: "chromium" }]',
        'instances: [{ browser: "chromium", launch: { executablePath: "/usr/bin/chromium" } }]',
    )
    root = _browser_workspace(tmp_path / "ws", own)
    monkeypatch.setenv("PLAYWRIGHT_BROWSERS_PATH", str(tmp_path / "no-browsers"))
    _, doc, _ = cli(capsys, "evidence", "doctor", CHANGE, "--json", "--root", str(root))
    assert doc is not None
    assert not [f for f in doc["findings"] if f["kind"] == "browsers-missing"]


# vitest as it behaves when its browser project cannot launch: the unit file reports,
# the browser file never does, and the process exits 1 (REPORTS.md: never trust a
# report without the exit code)
SILENT_VITEST = """\
#!/bin/sh
for arg in "$@"; do case "$arg" in --outputFile=*) out="${arg#--outputFile=}";; esac; done
mkdir -p "$(dirname "$out")"
cat > "$out" <<JSON
{"numTotalTests": 1, "numPassedTests": 1, "numFailedTests": 0, "numPendingTests": 0,
 "success": false, "testResults": [{"name": "$PWD/src/a.test.ts", "status": "passed",
 "message": "", "assertionResults": [{"fullName": "a", "title": "a", "status": "passed",
 "failureMessages": []}]}]}
JSON
echo " ✓ src/a.test.ts (1 test)"
echo "Error: browserType.launch: Executable doesn't exist at /nowhere/chrome-linux/chrome" >&2
exit 1
"""


def test_a_part_that_never_reported_is_named(tmp_path: Path, capsys: Any) -> None:
    root = make_repo(
        tmp_path / "ws",
        {
            "package.json": json.dumps(
                {"name": "w", "scripts": {"test": "vitest"}, "devDependencies": {"vitest": "3"}}
            ),
            ".gitignore": "node_modules\n",
            "vitest.workspace.js": WORKSPACE,
            "src/a.test.ts": "test('a', () => {});\n",
            "browser/b.test.ts": "test('b', () => {});\n",
        },
    )
    binary = root / "node_modules" / ".bin" / "vitest"
    binary.parent.mkdir(parents=True)
    binary.write_text(SILENT_VITEST)
    binary.chmod(0o755)
    make_change(root, CHANGE, "version: 3\nrequires: [test]\n")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "change")
    assert main(["evidence", "init", CHANGE, "--write", "--root", str(root)]) == 0
    code, doc = prove_json(root, CHANGE, capsys=capsys)
    assert code == 1
    test = receipts_of(doc, "test")["test"]
    assert test["tests"]["discovered"] == 1 and test["tests"]["failed"] == 0
    assert test["reason"].startswith("exited 1 although the report shows no failed test")
    assert "1 test file named like tests reported no test: browser/b.test.ts" in test["reason"]
    assert "the run said: Error: browserType.launch" in test["reason"]

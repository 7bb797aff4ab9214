"""Does the project's Playwright suite fail a test on an unexpected browser error?

A page that logs ``console.error`` or throws an uncaught error can still pass
every assertion; Playwright does not fail the test for it, and changeloop
cannot infer from outside whether the project meant it. The project says so
with a fixture: its ``page`` listens for ``console`` messages of type
``error`` and for ``pageerror``, and fails the test when one was not expected.
Doctor reads the test files (never runs them) and, when no file does both,
gives the fixture to add.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from changeloop.detect import javascript
from changeloop.detect.doctor.finding import DoctorFinding, cd_into
from changeloop.model import Provider, Repository
from changeloop.project.manifests import head

SOURCE_EXTS = (".js", ".mjs", ".cjs", ".ts", ".mts", ".cts")
_TEST_DIR = re.compile(r"""testDir\s*:\s*["'`]([^"'`]+)["'`]""")
_CONSOLE = re.compile(r"""\.on\(\s*["']console["']""")
_PAGEERROR = re.compile(r"""\.on\(\s*["']pageerror["']""")
_ERROR_TYPE = re.compile(r"""type\(\)\s*===?\s*["']error["']""")
MAX_FILES = 500
FIXTURE = """// A `page` that fails its test on any unexpected console.error or uncaught page error.
// Tests that expect an error list its text in `allowedConsoleErrors` (test.use).
const base = require("@playwright/test");

const test = base.test.extend({
  allowedConsoleErrors: [[], { option: true }],
  page: async ({ page, allowedConsoleErrors }, use, testInfo) => {
    const problems = [];
    const allowed = (text) => allowedConsoleErrors.some((a) => text.includes(a));
    page.on("console", (msg) => {
      if (msg.type() === "error" && !allowed(msg.text())) {
        problems.push(`console.error: ${msg.text()}`);
      }
    });
    page.on("pageerror", (err) => {
      if (!allowed(String(err.message))) problems.push(`uncaught page error: ${err.message}`);
    });
    await use(page);
    if (problems.length > 0 && testInfo.status === testInfo.expectedStatus) {
      throw new Error(`unexpected browser errors:\\n${problems.join("\\n")}`);
    }
  },
});

module.exports = { test, expect: base.expect };
"""


def test_dir(provider: Provider, repo: Repository) -> Path:
    """The suite's folder as the Playwright config names it (``testDir``), else the repository."""
    argv = provider.command or ()
    configs = [repo.path / a.split("=", 1)[-1] for a in argv if a.endswith(SOURCE_EXTS)]
    configs += [repo.path / f"playwright.config{ext}" for ext in javascript.CONFIG_EXTS]
    for config in configs:
        if config.is_file():
            found = _TEST_DIR.search(head(config))
            if found:
                return (config.parent / found.group(1)).resolve()
    return repo.path


def checks_browser_errors(folder: Path) -> bool:
    """Some file of the suite fails on ``console`` errors and on ``pageerror``."""
    seen = 0
    for path in sorted(folder.rglob("*")) if folder.is_dir() else ():
        if "node_modules" in path.parts or not path.name.endswith(SOURCE_EXTS):
            continue
        seen += 1
        if seen > MAX_FILES:
            return True  # too big to read here: not claimed missing
        text = head(path)
        if _PAGEERROR.search(text) and _CONSOLE.search(text) and _ERROR_TYPE.search(text):
            return True
    return False


def browser_errors_unchecked(provider: Provider, repo: Repository) -> DoctorFinding | None:
    """The finding, with the fixture to add, when no file of the suite installs one."""
    folder = test_dir(provider, repo)
    if checks_browser_errors(folder):
        return None
    where = folder.relative_to(repo.path.resolve()) if folder != repo.path else Path()
    target = (where / "fixtures.js").as_posix()
    quoted = shlex.quote(target)
    command = f"{cd_into(repo)}test -e {quoted} || cat > {quoted} <<'EOF'\n{FIXTURE}EOF"
    return DoctorFinding(
        "browser-errors-unchecked",
        f"provider {provider.name}: no file of the Playwright suite in {where.as_posix()} "
        "fails a test on an unexpected console.error or uncaught page error, so a page that "
        "logs errors can still pass (changeloop cannot tell from outside whether that is meant)",
        f"add a fixture whose page fails the test on them ({target}), and import `test` from "
        "it in the specs instead of from @playwright/test",
        command,
        severity="warning",
        repository=repo.name,
    )

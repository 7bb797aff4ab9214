"""The playwright adapter driving real Playwright in Debian's Chromium (pages via setContent).

One project holds every kind of test; each run picks some with ``--grep`` so a
few Chromium launches cover: credited, inherited, skipped, missing, test.fail(),
flaky with and without allowFlaky, failing, outputs, inputMode, injection and
wrapper commands.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from adapter_helpers import run_adapter
from browser_helpers import (
    make_ctx,
    make_plan,
    playwright_project,
    playwright_provider,
    require_browser,
)

from changeloop.outcome import Outcome
from changeloop.runner_reports import playwright_json

pytestmark = pytest.mark.browser

SPEC = r"""
const { test, expect } = require("@playwright/test");
const claim = (id) => ({ annotation: { type: "claim", description: id } });

test("plain @credited", claim("ok"), async ({ page }) => {
  await page.setContent("<h1>hi</h1>");
  await expect(page.getByRole("heading", { name: "hi" })).toBeVisible();
});
test("os input @credited", claim("by-keyboard"), async ({ page }) => {
  await page.setContent("<button>go</button>");
  await expect(page.getByRole("button", { name: "go" })).toBeVisible();
});
test.describe("group", claim("inherited"), () => {
  test("inner @credited", async ({ page }) => {
    await page.setContent("<p>x</p>");
    await expect(page.locator("p")).toHaveText("x");
  });
});
test("labels @credited", claim("a11y"), async ({ page }) => {
  await page.setContent('<label for="n">Name</label><input id="n">');
  await expect(page.getByLabel("Name")).toBeVisible();
});
test("skipped @credited", claim("skipped-claim"), async () => { test.skip(true, "not today"); });
test("expected failure @credited", claim("xfail-claim"), async () => {
  test.fail();
  expect(1).toBe(2);
});
test("flaky @flaky", claim("flaky-claim"), async ({ page }, info) => {
  await page.setContent("<p>ok</p>");
  expect(info.retry, "fails on the first attempt").toBe(1);
});
test("broken @broken", claim("broken-claim"), async ({ page }) => {
  await page.setContent("<p>ok</p>");
  await expect(page.locator("p"), "colourful failure").toHaveText("nope", { timeout: 300 });
});
"""

CLAIMS = {
    "ok": ["browser"],
    "by-keyboard": ["browser"],
    "inherited": ["browser"],
    "a11y": ["browser", "accessibility"],
    "skipped-claim": ["browser"],
    "xfail-claim": ["browser"],
    "flaky-claim": ["browser"],
    "never-annotated": ["browser"],
}


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    require_browser()
    return playwright_project(tmp_path_factory.mktemp("pw"), {"all.spec.js": SPEC})


@pytest.fixture(scope="module")
def passing(project: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[list[Outcome], Path]:
    """One real passing run of the module's spec, and a copy of the JSON report it read."""
    outcomes = _run(
        project,
        tmp_path_factory.mktemp("passing"),
        CLAIMS,
        command=("npx", "playwright", "test", "--grep", "@credited|@flaky"),
        outputs=("accessibility",),
    )
    kept = tmp_path_factory.mktemp("report") / "browser.json"
    kept.write_bytes((project / ".changeloop/reports/browser.json").read_bytes())
    return outcomes, kept


def _run(project: Path, tmp: Path, claims: dict[str, list[str]], **kw: Any) -> list[Outcome]:
    provider = playwright_provider(**kw)
    plan = make_plan(project, claims=claims, claim_input_modes={"by-keyboard": "os-input"})
    ctx = make_ctx(plan, provider, project, tmp / "run")
    return run_adapter(ctx)


def test_passing_run_credits_annotations_and_leaves_the_rest_inconclusive(
    passing: tuple[list[Outcome], Path],
) -> None:
    browser, a11y = passing[0]
    assert browser.command is not None
    assert browser.command.count("--reporter=json") == 1
    assert browser.command[-2:] == ("--project", "chromium")
    assert browser.exit_code == 0
    assert browser.capability == "browser" and browser.status == "inconclusive"
    assert browser.claims == {
        "ok": "credited",
        "inherited": "credited",  # from the describe-level annotation
        "a11y": "credited",
        "by-keyboard": "uncredited",  # needs os-input; this is browser automation
        "skipped-claim": "uncredited",
        "xfail-claim": "uncredited",
        "flaky-claim": "uncredited",  # allowFlaky is off
        "never-annotated": "uncredited",
    }
    assert browser.input_mode == "browser-automation"
    assert browser.details["flaky"] == ["all.spec.js::flaky @flaky [chromium]"]
    assert "never-annotated" in (browser.reason or "")
    assert browser.tests is not None and browser.tests.skipped == 1
    # outputs: one more receipt from the same run, for the claims needing accessibility
    assert a11y.capability == "accessibility"
    assert a11y.status == "pass" and a11y.claims == {"a11y": "credited"}


def test_flaky_credits_only_with_allow_flaky_and_given_options_are_not_duplicated(
    project: Path, tmp_path: Path
) -> None:
    given = ("npx", "playwright", "test", "--reporter=list", "--project=chromium", "-g", "@flaky")
    claims = {"flaky-claim": ["browser"]}
    (outcome,) = _run(project, tmp_path, claims, command=given, allow_flaky=True)
    assert outcome.command == (*given[:3], "--reporter=list,json", *given[4:])
    assert outcome.status == "pass", outcome.reason
    assert outcome.claims == {"flaky-claim": "credited"}
    assert outcome.details["flaky"] == ["all.spec.js::flaky @flaky [chromium]"]


def test_failing_test_fails_and_marks_its_claim(project: Path, tmp_path: Path) -> None:
    (outcome,) = _run(
        project,
        tmp_path,
        {"broken-claim": ["browser"]},
        command=("npx", "playwright", "test", "--grep", "@broken", "--retries", "0"),
    )
    assert outcome.status == "fail"
    assert outcome.claims == {"broken-claim": "failed"}
    assert outcome.failed_tests == ("all.spec.js::broken @broken [chromium]",)
    messages = [f.message for f in outcome.findings if f.kind == "test-failed"]
    assert messages and "colourful failure" in messages[0]
    assert "\x1b[" not in messages[0]


def test_wrapper_command_without_report_is_inconclusive_naming_the_file(
    project: Path, tmp_path: Path
) -> None:
    (outcome,) = _run(
        project,
        tmp_path,
        {"ok": ["browser"]},
        command=("sh", "-c", "npx playwright test --grep 'plain @credited' --reporter=line"),
        report="test-results/e2e.json",
    )
    assert outcome.command == (
        "sh",
        "-c",
        "npx playwright test --grep 'plain @credited' --reporter=line",
    )
    assert outcome.exit_code == 0
    assert outcome.status == "inconclusive"
    assert "test-results/e2e.json" in (outcome.reason or "")
    assert [f.kind for f in outcome.findings] == ["report-missing"]


def test_reader_on_a_real_report(passing: tuple[list[Outcome], Path]) -> None:
    result = playwright_json.read(passing[1])
    assert result.tool == "playwright" and result.version
    by_name = {t.name: t for t in result.tests or ()}
    assert by_name["group › inner @credited [chromium]"].claims == ("inherited",)
    assert by_name["skipped @credited [chromium]"].outcome == "skipped"
    assert by_name["expected failure @credited [chromium]"].claims == ()
    assert by_name["flaky @flaky [chromium]"].flaky
    assert result.credited_claims() == ("a11y", "by-keyboard", "inherited", "ok")

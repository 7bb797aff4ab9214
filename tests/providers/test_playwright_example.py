"""examples/web end to end without the engine: its service, its Playwright tests, its claims."""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

import anyio
import pytest
from adapter_helpers import drive, run_adapter
from browser_helpers import EXAMPLE_WEB, assert_clean, make_ctx, require_browser
from port_helpers import free_port

from changeloop.outcome import Finding, Outcome
from changeloop.plan import build_plan
from changeloop.services import ServiceManager
from changeloop.workspace.discovery import find_change

pytestmark = pytest.mark.browser


def _copy_example(tmp: Path) -> Path:
    root = tmp / "web"
    shutil.copytree(
        EXAMPLE_WEB,
        root,
        ignore=shutil.ignore_patterns("node_modules", ".changeloop", "test-results"),
    )
    (root / "node_modules").symlink_to(EXAMPLE_WEB / "node_modules")
    return root


def test_example_change_is_credited_in_chromium_and_leaves_nothing_running(tmp_path: Path) -> None:
    require_browser()
    root = _copy_example(tmp_path)
    plan = build_plan(root, find_change(root, "add-greeting"))
    # Same wiring as examples/web, on a free port so a busy 4173 cannot disturb the suite.
    port = free_port()
    web = plan.services["web"]
    assert web.readiness is not None and web.readiness.body == "changeloop-example-web"
    web = replace(
        web,
        command=tuple(str(port) if a == "4173" else a for a in web.command),
        readiness=replace(web.readiness, url=f"http://127.0.0.1:{port}/", port=port),
    )
    plan = replace(plan, services={"web": web})
    provider = replace(plan.providers["browser"], env={"WEB_URL": f"http://127.0.0.1:{port}"})
    ctx = make_ctx(plan, provider, root, tmp_path / "run")
    problems: list[Finding] = []

    async def main() -> list[Outcome]:
        async with ServiceManager(
            plan,
            workdirs={"self": root},
            env=dict(ctx.env),
            log_dir=tmp_path / "services",
            users={"web": 1},
        ) as services:
            async with services.lease(provider.services) as found:
                problems.extend(found)
                return await drive(ctx) if not found else []

    browser, a11y = anyio.run(main)
    assert problems == []
    assert browser.status == "pass", browser.reason
    assert browser.claims == {"greeting": "credited", "greeting-accessible": "credited"}
    assert a11y.capability == "accessibility" and a11y.status == "pass"
    assert a11y.claims == {"greeting-accessible": "credited"}
    assert browser.tests is not None and browser.tests.passed == 2
    assert_clean(tmp_path, [], [port])


def test_console_error_fixture_fails_the_test(tmp_path: Path) -> None:
    """The example's fixture turns an unexpected console.error into a failed test."""
    require_browser()
    root = _copy_example(tmp_path)
    (root / "tests" / "noisy.spec.js").write_text(
        'const { test } = require("./fixtures");\n'
        'test("noisy", async ({ page }) => {\n'
        "  await page.setContent(\"<script>console.error('boom from page')</script>\");\n"
        "});\n"
        'test("thrower", async ({ page }) => {\n'
        "  await page.setContent(\"<script>setTimeout(() => { throw new Error('kaput') })</script>\");\n"
        "  await page.waitForTimeout(100);\n"
        "});\n"
    )
    plan = build_plan(root, find_change(root, "add-greeting"))
    provider = replace(
        plan.providers["browser"],
        services=(),
        command=("npx", "playwright", "test", "tests/noisy.spec.js"),
        outputs=(),
    )
    (outcome,) = run_adapter(make_ctx(plan, provider, root, tmp_path / "run"))
    assert outcome.status == "fail"
    text = "\n".join(f.message for f in outcome.findings)
    assert "console.error: boom from page" in text
    assert "uncaught page error: kaput" in text

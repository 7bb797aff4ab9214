"""Which commands are direct `playwright test` runs, and what the adapter adds to them."""

from __future__ import annotations

from pathlib import Path

import pytest
from browser_helpers import make_plan, playwright_provider

from changeloop.providers import playwright, playwright_argv


@pytest.mark.parametrize(
    ("argv", "index"),
    [
        (["npx", "playwright", "test"], 2),
        (["npx", "--yes", "@playwright/test", "test", "-g", "x"], 3),
        (["npx", "playwright@1.65.1", "test"], 2),
        (["/usr/local/bin/npx", "-p", "foo", "playwright", "test"], 4),
        (["./node_modules/.bin/playwright", "test"], 1),
        (["playwright", "show-report"], None),
        (["npm", "run", "e2e"], None),
        (["npx", "vitest", "test"], None),
        (["npx", "playwright-core", "test"], None),
        ([], None),
    ],
)
def test_direct_commands_are_recognised(argv: list[str], index: int | None) -> None:
    assert playwright_argv.test_index(argv) == index


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        (
            ("npx", "playwright", "test"),
            ("npx", "playwright", "test", "--reporter=json", "--project", "chromium"),
        ),
        (
            ("npx", "playwright", "test", "--reporter", "json", "--project", "firefox"),
            ("npx", "playwright", "test", "--reporter", "json", "--project", "firefox"),
        ),
        (
            ("npx", "playwright", "test", "--reporter=dot", "--project=chromium"),
            ("npx", "playwright", "test", "--reporter=dot,json", "--project=chromium"),
        ),
        (
            ("npx", "playwright", "test", "--reporter", "list,json", "--", "x"),
            (
                "npx",
                "playwright",
                "test",
                "--reporter",
                "list,json",
                "--project",
                "chromium",
                "--",
                "x",
            ),
        ),
        (("npm", "run", "e2e"), ("npm", "run", "e2e")),
    ],
)
def test_reporter_and_project_added_once(
    command: tuple[str, ...], expected: tuple[str, ...]
) -> None:
    provider = playwright_provider(command=command, project="chromium")
    assert playwright.effective_command(provider) == expected


def test_no_project_configured_adds_only_the_reporter() -> None:
    provider = playwright_provider(project=None)
    assert playwright.effective_command(provider) == (
        "npx",
        "playwright",
        "test",
        "--reporter=json",
    )


def test_defaults_and_preflight(tmp_path: Path) -> None:
    provider = playwright_provider(outputs=("accessibility", "browser"), report="../out.json")
    plan = make_plan(tmp_path)
    assert playwright.default_resources(provider, plan) == (
        "workspace-read:self",
        "dev-server:self",
        "browser:self",
    )
    assert playwright.capabilities(provider) == ("browser", "accessibility")
    assert [p.code for p in playwright.preflight(provider, plan)] == ["path_escape"]
    assert playwright.report_path(playwright_provider()) == ".changeloop/reports/browser.json"

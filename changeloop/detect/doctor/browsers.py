"""Has Playwright a Chromium to launch? Without one every browser test fails, slowly."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from changeloop.detect import javascript
from changeloop.detect.doctor.finding import DoctorFinding, cd_into
from changeloop.model import Provider, Repository
from changeloop.project.manifests import head


def browsers_missing(provider: Provider, repo: Repository) -> DoctorFinding | None:
    """Playwright would launch a browser it has not downloaded.

    A config naming ``executablePath`` brings its own browser; otherwise Playwright's
    browser folder (``PLAYWRIGHT_BROWSERS_PATH`` or ``~/.cache/ms-playwright``) must
    hold a Chromium.
    """
    if _brings_own_browser(provider, repo):
        return None
    where = os.environ.get("PLAYWRIGHT_BROWSERS_PATH") or str(Path.home() / ".cache/ms-playwright")
    if where == "0":  # browsers inside node_modules
        where = str(repo.path / "node_modules/playwright-core/.local-browsers")
    try:
        found = [p.name for p in Path(where).iterdir() if p.name.startswith("chromium")]
    except OSError:
        found = []
    if found:
        return None
    system = next(
        (p for w in ("chromium", "chromium-browser", "google-chrome") if (p := shutil.which(w))),
        None,
    )
    alt = (
        f"; where browsers cannot be downloaded, use the system Chromium: set "
        f"`use: {{ launchOptions: {{ executablePath: '{system}' }} }}` in the Playwright config"
        if system
        else ""
    )
    return DoctorFinding(
        "browsers-missing",
        f"provider {provider.name} runs Playwright but no Chromium is installed in {where} "
        "(every browser test would fail)",
        f"download Playwright's Chromium{alt}",
        f"{cd_into(repo)}npx playwright install chromium",
        repository=repo.name,
    )


def _brings_own_browser(provider: Provider, repo: Repository) -> bool:
    """A Playwright config (named on the command line or the default one) sets executablePath."""
    argv = provider.command or ()
    configs = [repo.path / a.split("=", 1)[-1] for a in argv if a.endswith((".ts", ".js", ".mjs"))]
    configs += [repo.path / f"playwright.config{ext}" for ext in javascript.CONFIG_EXTS]
    return any(c.is_file() and "executablePath" in head(c) for c in configs)

"""Has Playwright a Chromium to launch? Without one every browser test fails, slowly.

Playwright providers, and any runner that launches Playwright's browsers — a
vitest config or workspace with a browser project on the ``playwright``
provider — get the same check (``browsers-missing``), with the system
Chromium as the alternative where browsers cannot be downloaded.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Sequence
from pathlib import Path

from changeloop.detect import javascript
from changeloop.detect.doctor.finding import DoctorFinding, FileEdit, cd_into
from changeloop.model import Provider, Repository
from changeloop.project.manifests import head

_VITEST_CONFIGS = ("vitest.workspace", "vitest.config", "vite.config", "vitest.projects")
# a browser project on Playwright: `browser: { … provider: 'playwright' | playwright() … }`
_VITEST_BROWSER = re.compile(r"\bbrowser\s*:\s*\{", re.MULTILINE)
_VITEST_PLAYWRIGHT = re.compile(r"""provider\s*:\s*(['"]playwright['"]|playwright\s*\()""")


def vitest_browser_config(where: Path, argv: Sequence[str]) -> Path | None:
    """The vitest config (named by ``--config``/``--workspace``, else the default ones in
    ``where``) that declares a browser project run by Playwright, if any."""
    named = [
        a.split("=", 1)[1] if "=" in a else argv[i + 1]
        for i, a in enumerate(argv)
        if a.split("=", 1)[0] in ("--config", "-c", "--workspace", "--project-config")
        and ("=" in a or i + 1 < len(argv))
    ]
    candidates = [where / n for n in named] + [
        where / f"{stem}{ext}" for stem in _VITEST_CONFIGS for ext in javascript.CONFIG_EXTS
    ]
    for path in candidates:
        if not path.is_file():
            continue
        text = head(path)
        if _VITEST_BROWSER.search(text) and _VITEST_PLAYWRIGHT.search(text):
            return path
    return None


def browsers_missing(
    provider: Provider, repo: Repository, *, vitest: Path | None = None
) -> DoctorFinding | None:
    """Playwright would launch a browser it has not downloaded.

    A config naming ``executablePath`` brings its own browser; otherwise Playwright's
    browser folder (``PLAYWRIGHT_BROWSERS_PATH`` or ``~/.cache/ms-playwright``) must
    hold a Chromium. ``vitest``: the vitest config whose browser project launches it.
    """
    if vitest is not None:
        if "executablePath" in head(vitest):
            return None
    elif _brings_own_browser(provider, repo):
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
    runs = "runs Playwright" if vitest is None else f"runs vitest's browser project ({vitest.name})"
    edit = None
    if vitest is None:
        alt = (
            f"; where browsers cannot be downloaded, use the system Chromium: set "
            f"`use: {{ launchOptions: {{ executablePath: '{system}' }} }}` in the Playwright "
            "config"
            if system
            else ""
        )
    else:
        alt = (
            f"; where browsers cannot be downloaded, give the browser project the system "
            f"Chromium in {_rel(vitest, repo)} (the text below: each chromium instance of "
            f"`browser.instances` launched from {system})"
            if system
            else ""
        )
        if system:
            edit = FileEdit(
                _rel(vitest, repo),
                "browser: {\n"
                "  instances: [\n"
                f"    {{ browser: 'chromium', launch: {{ executablePath: '{system}' }} }},\n"
                "  ],\n"
                "},\n",
            )
    return DoctorFinding(
        "browsers-missing",
        f"provider {provider.name} {runs} but no Chromium is installed in {where} "
        "(every browser test would fail, or never report)",
        f"download Playwright's Chromium{alt}",
        f"{cd_into(repo)}npx playwright install chromium",
        repository=repo.name,
        edit=edit,
    )


def _rel(path: Path, repo: Repository) -> str:
    try:
        inner = path.relative_to(repo.path).as_posix()
    except ValueError:
        return str(path)
    return inner if repo.relpath in ("", ".") else f"{repo.relpath.rstrip('/')}/{inner}"


def _brings_own_browser(provider: Provider, repo: Repository) -> bool:
    """A Playwright config (named on the command line or the default one) sets executablePath."""
    argv = provider.command or ()
    configs = [repo.path / a.split("=", 1)[-1] for a in argv if a.endswith((".ts", ".js", ".mjs"))]
    configs += [repo.path / f"playwright.config{ext}" for ext in javascript.CONFIG_EXTS]
    return any(c.is_file() and "executablePath" in head(c) for c in configs)

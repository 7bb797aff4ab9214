"""The command a Playwright provider runs: JSON reporter, project and output paths added.

Example::

    effective_command(provider)   # ("npx", "playwright", "test", "--reporter=json",
                                  #  "--project", "chromium")  when the provider names one
    run_argv(provider, out_dir)   # the same plus "--output", out_dir (this run's own path)
    test_index(("npm", "run", "e2e"))   # None: a wrapper runs as written

Only a direct ``playwright test`` (``npx playwright test``, ``npx @playwright/test
test``, a path to the ``playwright`` binary) is changed, and never twice: a
reporter the user named is kept and ``json`` added to it, a ``--project`` or
``--output`` the user gave wins. Pure: argv in, argv out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path, PurePosixPath

from changeloop.model import Provider

OUTPUT_DIR = "playwright-output"  # Playwright's outputDir, under the provider's run directory
HTML_DIR = "playwright-report"
_NPX_FLAGS_WITH_VALUE = frozenset({"-p", "--package", "-c", "--call"})
_PACKAGES = ("playwright", "@playwright/test")


def test_index(argv: Sequence[str]) -> int | None:
    """Index of ``test`` when ``argv`` runs ``playwright test`` directly, else None (a wrapper)."""
    if not argv:
        return None
    head = PurePosixPath(argv[0]).name
    if head == "playwright":
        return 1 if len(argv) > 1 and argv[1] == "test" else None
    if head != "npx":
        return None
    i = 1
    while i < len(argv) and argv[i].startswith("-"):
        i += 2 if argv[i] in _NPX_FLAGS_WITH_VALUE else 1
    if i + 1 < len(argv) and _is_playwright_package(argv[i]) and argv[i + 1] == "test":
        return i + 1
    return None


def _is_playwright_package(token: str) -> bool:
    """``playwright``, ``@playwright/test``, optionally pinned (``playwright@1.65.1``)."""
    scope = "@" if token.startswith("@") else ""
    return scope + token.removeprefix("@").split("@", 1)[0] in _PACKAGES


def effective_command(provider: Provider) -> tuple[str, ...] | None:
    """The argv that runs: reporter and project added to a direct command, never duplicated."""
    if provider.command is None:
        return None
    argv = list(provider.command)
    if test_index(argv) is None:
        return tuple(argv)
    end = argv.index("--") if "--" in argv else len(argv)
    opts, rest = argv[:end], argv[end:]
    reporter_at = _option_at(opts, "--reporter")
    if reporter_at is None:
        opts.append("--reporter=json")
    else:
        _ensure_json_reporter(opts, reporter_at)
    if provider.project and _option_at(opts, "--project") is None:
        opts += ["--project", provider.project]
    return (*opts, *rest)


def run_argv(provider: Provider, output_dir: Path) -> tuple[str, ...] | None:
    """:func:`effective_command` plus ``--output <output_dir>`` for a direct command.

    Kept out of :func:`effective_command` (the fingerprint's command) because the
    path is this run's own; a command that names ``--output`` keeps its choice.
    """
    argv = effective_command(provider)
    if argv is None or test_index(argv) is None:
        return argv
    end = argv.index("--") if "--" in argv else len(argv)
    if _option_at(argv[:end], "--output") is not None:
        return argv
    return (*argv[:end], "--output", str(output_dir), *argv[end:])


def output_env(env: Mapping[str, str], run_dir: Path) -> dict[str, str]:
    """Where Playwright writes what is not the JSON report: the run directory, not the tree."""
    out = {
        "PLAYWRIGHT_LAST_RUN_OUTPUT_FILE": str(run_dir / OUTPUT_DIR / ".last-run.json"),
        "PLAYWRIGHT_HTML_OUTPUT_DIR": str(run_dir / HTML_DIR),
    }
    return {name: env.get(name) or value for name, value in out.items()}


def _option_at(argv: Sequence[str], flag: str) -> int | None:
    for i, arg in enumerate(argv):
        if arg == flag or arg.startswith(flag + "="):
            return i
    return None


def _ensure_json_reporter(argv: list[str], at: int) -> None:
    """Keep the user's reporters and add ``json`` to them (``--reporter=list,json``)."""
    arg = argv[at]
    if "=" in arg:
        value = arg.split("=", 1)[1]
        if "json" not in value.split(","):
            argv[at] = f"--reporter={value},json"
    elif at + 1 < len(argv) and "json" not in argv[at + 1].split(","):
        argv[at + 1] = f"{argv[at + 1]},json"

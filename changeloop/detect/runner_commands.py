"""The argv of a derived runner, with changeloop's structured reporter added.

Each runner writes its report under ``.changeloop/reports/`` (or libtest text on
stdout, a unittest log) so test-discovery reads counts instead of scraping text.
"""

from __future__ import annotations

import posixpath
from pathlib import Path

from changeloop.detect import scripts
from changeloop.detect.types import Detection
from changeloop.fingerprints.environment import DERIVED_PYTHON
from changeloop.project.manifests import dig, read_toml


def test_command(det: Detection, repo: Path, report: str) -> tuple[tuple[str, ...], str | None]:
    """(argv, report path or None) running ``det``'s framework with a structured reporter."""
    if det.adapter == "unittest":
        # The runner the maintainers run, never pytest in its place (pytest skips
        # `load_tests`); their own args stay, and -v (last: `discover` must come
        # first when given) lists each test for the reader.
        return (DERIVED_PYTHON, "-m", "unittest", *det.args, "-v"), None
    if det.adapter == "pytest":
        # `python` is resolved when the provider runs (the repository's .venv if it
        # has one then), never frozen here (changeloop/fingerprints/environment.py).
        return (DERIVED_PYTHON, "-m", "pytest", f"--junitxml={report}.xml"), f"{report}.xml"
    if det.adapter == "vitest":
        return (
            ("npx", "vitest", "run", "--reporter=json", f"--outputFile={report}.json"),
            f"{report}.json",
        )
    if det.adapter == "jest":
        return ("npx", "jest", "--json", f"--outputFile={report}.json"), f"{report}.json"
    if det.adapter == "mocha":
        return ("npx", "mocha", *mocha_reporter(report)), f"{report}.xml"
    if det.adapter == "node-test":
        # Node 20 does not expand globs: pass no paths and let node find its test files.
        return (
            (
                "node",
                "--test",
                "--test-reporter=junit",
                f"--test-reporter-destination={report}.xml",
            ),
            f"{report}.xml",
        )
    if det.adapter == "cargo":
        # --no-fail-fast: cargo stops at the first failing test binary otherwise, and
        # the tests of every binary after it would go uncounted
        argv = (
            ("cargo", "test", "--workspace", "--no-fail-fast")
            if (repo / "Cargo.toml").is_file()
            and dig(read_toml(repo / "Cargo.toml"), "workspace") is not None
            else ("cargo", "test", "--no-fail-fast")
        )
        return argv, None  # libtest text on stdout: stable cargo has no structured report
    raise ValueError(det.adapter)


def playwright_command(path: Path) -> tuple[str, ...]:
    """`npx playwright test` with the maintainers' own arguments (`--config …`), if a script
    runs it; the adapter adds its JSON reporter (an existing `--reporter` is dropped)."""
    call = scripts.browser_call(path)
    if call is None:
        return ("npx", "playwright", "test")
    args = scripts.without(call.args[1:], ("--reporter",))
    args = tuple(a for a in args if a not in ("--ui", "--debug", "--headed"))
    return ("npx", "playwright", "test", *args)


_REPORT_FLAGS = {
    "vitest": ("--reporter", "--outputFile", "--watch", "-w"),
    "jest": ("--json", "--outputFile", "--watch", "--watchAll"),
    "node-test": ("--test-reporter", "--test-reporter-destination", "--watch"),
    "mocha": ("--reporter", "-R", "--reporter-option", "--reporter-options", "-O", "--watch"),
}


def mocha_reporter(report: str) -> tuple[str, ...]:
    """mocha's own xunit reporter, written to a file (it counts every test of a suite,
    two of one title included)."""
    return ("--reporter", "xunit", "--reporter-option", f"output={report}.xml")


def script_command(call: scripts.RunnerCall, report: str) -> tuple[tuple[str, ...], str]:
    """The maintainers' runner call with changeloop's structured reporter added.

    ``report`` is the report's stem relative to the repository; a call run in a
    workspace member names it relative to the member's folder (where it runs).
    """
    here = posixpath.relpath(report, call.cwd) if call.cwd else report
    args = scripts.without(call.args, _REPORT_FLAGS.get(call.adapter, ()))
    if call.adapter == "vitest":
        run = args if args[:1] == ("run",) else ("run", *args)
        argv = ("npx", "vitest", *run, "--reporter=json", f"--outputFile={here}.json")
        return argv, f"{report}.json"
    if call.adapter == "jest":
        return ("npx", "jest", *args, "--json", f"--outputFile={here}.json"), f"{report}.json"
    if call.adapter == "mocha":
        args = tuple(a for a in args if a not in ("-w",))
        return ("npx", "mocha", *args, *mocha_reporter(here)), f"{report}.xml"
    # node --test: the reporter right after --test, everything else in the maintainers'
    # order (a flag's value stays beside it; globs are expanded when it runs)
    at = args.index("--test") + 1 if "--test" in args else 0
    reporter = ("--test-reporter=junit", f"--test-reporter-destination={here}.xml")
    return ("node", *args[:at], *reporter, *args[at:]), f"{report}.xml"

"""Which part of a suite did not report, when the runner failed and its report shows nothing
failed.

A runner can exit non-zero while its report lists only passing tests: a vitest
workspace whose browser project could not launch its browser reports the other
project's tests and leaves the browser tests out entirely. The ``test`` receipt
fails either way (a report never outvotes the exit code); this module says
*what* is missing, so the user does not have to read the log to learn it.

``test_files`` (in ``prepare``, where the adapter may read the sandbox) lists the
files named like tests (``*.test.*``, ``*.spec.*``, ``__tests__/``) where the
command runs; ``explain`` (in ``read``, pure) names those the report did not
mention, and the run's first error line::

    explain(report, ["src/a.test.ts", "browser/b.test.ts"], output)
    # "1 test file named like tests reported no test: browser/b.test.ts; the run
    #  said: Error: browserType.launch: Executable doesn't exist at …"
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path

from changeloop.runner_reports.model import ReportResult, strip_ansi

MAX_FILES = 2000  # a walk bounded like the rest of a provider's preparation
SHOWN = 3
_TEST_NAME = re.compile(r"(\.(test|spec)\.[cm]?[jt]sx?$)")
_SKIP = frozenset({"node_modules", ".git", ".changeloop", "dist", "build", "coverage", ".venv"})
_ERROR = re.compile(
    r"^\s*(?:[\w.]*Error\b|error\b|ERR!|Unhandled|Failed to|Cannot |FAIL\b).*", re.IGNORECASE
)


def test_files(where: Path) -> list[str]:
    """Files under ``where`` named like JavaScript tests (relative, sorted), at most
    :data:`MAX_FILES`; dependency and build folders are left out."""
    found: list[str] = []
    for folder, dirs, files in os.walk(where):
        dirs[:] = sorted(d for d in dirs if d not in _SKIP and not d.startswith("."))
        rel = Path(folder).relative_to(where)
        in_tests = "__tests__" in rel.parts
        for name in sorted(files):
            if _TEST_NAME.search(name) or (in_tests and name.endswith((".js", ".ts"))):
                found.append((rel / name).as_posix())
                if len(found) >= MAX_FILES:
                    return found
    return found


def explain(report: ReportResult | None, candidates: Sequence[str], output: str) -> str | None:
    """What did not report, for a failed run whose report shows no failure; None if unknown."""
    parts: list[str] = []
    if report is not None and report.tests is not None and candidates:
        reported = {_norm(t.file) for t in report.tests if t.file}
        missing = [c for c in candidates if not any(r.endswith(c) for r in reported)]
        if missing and reported:
            shown = ", ".join(missing[:SHOWN]) + (
                f" (+{len(missing) - SHOWN} more)" if len(missing) > SHOWN else ""
            )
            files = "file" if len(missing) == 1 else "files"
            parts.append(f"{len(missing)} test {files} named like tests reported no test: {shown}")
    line = _first_error(output)
    if line is not None:
        parts.append(f"the run said: {line}")
    return "; ".join(parts) if parts else None


def _norm(path: str) -> str:
    return path.replace("\\", "/")


def _first_error(output: str) -> str | None:
    for raw in strip_ansi(output).splitlines():
        found = _ERROR.match(raw)
        if found:
            line = found.group(0).strip()
            return line if len(line) <= 200 else line[:199] + "…"
    return None

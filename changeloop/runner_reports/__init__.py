"""Test-report readers shared by the test-discovery and playwright adapters.

Example::

    from changeloop.runner_reports import read_report
    result = read_report(Path("test-results/unit.xml"))                 # sniffed
    result = read_report(b"...", format="vitest")                       # named

Every reader returns :class:`changeloop.runner_reports.model.ReportResult`.
Readers never raise on bad input: an unreadable or truncated report is a result
with ``counts is None`` and ``error`` saying why (the adapter makes it
``inconclusive`` or ``fail``). The exit code is judged by the adapter, never
here (a report cannot outvote it).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from changeloop.errors import FileRefused
from changeloop.fsio import MIB, read_regular
from changeloop.runner_reports import (
    jest_vitest_json,
    junit,
    libtest,
    playwright_json,
    pytest_json,
    tap,
    unittest,
)
from changeloop.runner_reports.model import ReportResult, unreadable
from changeloop.runner_reports.sniff import sniff

Reader = Callable[[Path | bytes], ReportResult]

READERS: dict[str, Reader] = {
    "junit": junit.read,
    "pytest-json": pytest_json.read,
    "jest-json": jest_vitest_json.read,
    "vitest-json": jest_vitest_json.read,
    "playwright-json": playwright_json.read,
    "tap": tap.read,
    "libtest": libtest.read,
    "unittest": unittest.read,
}
# What users may write in ``format:`` (runner names read naturally there).
ALIASES: dict[str, str] = {
    "junit-xml": "junit",
    "xml": "junit",
    "nextest": "junit",
    "pytest-json-report": "pytest-json",
    "jest": "jest-json",
    "vitest": "vitest-json",
    "playwright": "playwright-json",
    "node-tap": "tap",
    "cargo": "libtest",
    "cargo-test": "libtest",
    "python-unittest": "unittest",
    "pyunit": "unittest",
}
FORMATS = tuple(sorted({*READERS, *ALIASES}))
# The largest report read: big suites write tens of MiB of JUnit XML; beyond
# this a report is refused (inconclusive) rather than read into memory.
REPORT_LIMIT = 64 * MIB


def canonical_format(name: str) -> str | None:
    """The reader a ``format:`` value names, or ``None`` if unknown."""
    key = name.strip().lower()
    key = ALIASES.get(key, key)
    return key if key in READERS else None


def read_report(source: Path | bytes, format: str | None = None) -> ReportResult:
    """Read one report (a path or its bytes) with the named or sniffed reader.

    A path must be a regular file of at most :data:`REPORT_LIMIT` bytes: a FIFO
    or a device named as the report is refused, never waited on or read forever.
    """
    try:
        data = (
            read_regular(source, limit=REPORT_LIMIT, what="report")
            if isinstance(source, Path)
            else source
        )
    except FileRefused as exc:
        return unreadable(format or "unknown", f"cannot read report: {exc.problems[0].message}")
    if not data.strip():
        return unreadable(format or "unknown", "the report is empty")
    fmt = canonical_format(format) if format else sniff(data)
    if fmt is None:
        why = (
            f"unknown report format {format!r}"
            if format
            else "report format not recognised (name it with `format:`)"
        )
        return unreadable(format or "unknown", why)
    try:
        return READERS[fmt](data)
    except (TypeError, AttributeError, KeyError, IndexError, ValueError) as exc:
        # Valid JSON/XML of the wrong shape (a list where a runner writes objects).
        return unreadable(fmt, f"{fmt} report has an unexpected shape: {exc}")

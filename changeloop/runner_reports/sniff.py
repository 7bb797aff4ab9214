"""Guess a report's format from its content, for providers without ``format:``."""

from __future__ import annotations

import json
import re

from changeloop.runner_reports.jest_vitest_json import looks_like_jest

_TAP = re.compile(r"^(TAP version \d+|1\.\.\d+|(not )?ok\b)", re.MULTILINE)
_UNITTEST = re.compile(
    r"^Ran \d+ tests? in [0-9.]+m?s$|^NO TESTS RAN\b|"
    r"^\S+ \([\w.]+\) \.\.\. (ok|FAIL|ERROR|skipped|expected failure|unexpected success)",
    re.MULTILINE,
)
_LIBTEST = re.compile(r"^(test result: (ok|FAILED)\.|running \d+ tests?$)", re.MULTILINE)


def sniff(data: bytes) -> str | None:
    """``junit``, ``pytest-json``, ``jest-json``, ``vitest-json``, ``playwright-json``,
    ``unittest``, ``tap``, ``libtest``, or ``None`` when nothing fits.

    unittest is tried before TAP: a test that writes to stderr can leave a bare
    ``ok`` at the start of a line, which TAP would claim."""
    head = data.lstrip()[:4096]
    if head.startswith(b"<"):
        return "junit"
    if head.startswith(b"{"):
        try:
            doc = json.loads(data)
        except ValueError:
            return None
        if not isinstance(doc, dict):
            return None
        if "summary" in doc and ("collectors" in doc or "exitcode" in doc):
            return "pytest-json"
        if "suites" in doc and ("stats" in doc or "config" in doc):
            return "playwright-json"
        if "testResults" in doc:
            return "jest-json" if looks_like_jest(doc) else "vitest-json"
        return None
    text = data.decode("utf-8", errors="replace")
    if _UNITTEST.search(text):
        return "unittest"
    if _TAP.search(text):
        return "tap"
    if _LIBTEST.search(text):
        return "libtest"
    return None

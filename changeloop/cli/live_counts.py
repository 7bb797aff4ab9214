"""Test counts while a suite runs, read from the log the runner streams into.

Example::

    counter = LogCounter(Path(".changeloop/runs/…/test/test.log"))
    counter.poll()          # reads what was appended since the last poll
    counter.text()          # "41 passed, 1 failed" (None until a test was seen)

Only what runners print as they go is counted: pytest's progress characters
(``tests/test_a.py ..F.s``) and ``-v`` words (``PASSED``/``FAILED``), unittest's
and libtest's ``... ok``/``... FAIL``, TAP's ``ok N``/``not ok N``. A runner that
writes its report only at the end (vitest or jest with a JSON reporter) shows no
count, never a wrong one. The receipt's counts come from the report, not from here.
"""

from __future__ import annotations

import re
from pathlib import Path

MAX_READ = 256 * 1024  # per poll: a runner that floods its log is not re-read from the start
_PYTEST_PROGRESS = re.compile(r"^\S+\.py ([.FEsxX]+)(?:\s+\[\s*\d+%\])?\s*$")
_PYTEST_GROWING = re.compile(r"^\S+\.py ([.FEsxX]*)$")  # a file's line while its tests run
_PYTEST_VERBOSE = re.compile(r"::\S+ (PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS)\b")
_DOTS = re.compile(r" \.\.\. (ok|FAIL|ERROR|FAILED|skipped|ignored|expected failure)\b")
_TAP = re.compile(r"^\s*(not ok|ok) \d+\b(?:.*# (SKIP|TODO))?", re.IGNORECASE)
_PASSED = {".", "PASSED", "ok", "XPASS"}
_FAILED = {"F", "E", "FAILED", "ERROR", "FAIL", "not ok"}


class LogCounter:
    """Counts tests in a growing log; ``poll`` is cheap enough to call a few times a second."""

    def __init__(self, log: Path) -> None:
        self.log = log
        self.offset = 0
        self.partial = ""
        self.partial_counted = 0  # progress characters of the unfinished line already counted
        self.passed = 0
        self.failed = 0
        self.skipped = 0

    def poll(self) -> None:
        try:
            with self.log.open("rb") as fh:
                fh.seek(self.offset)
                chunk = fh.read(MAX_READ)
        except OSError:
            return
        if not chunk:
            return
        self.offset += len(chunk)
        text = self.partial + chunk.decode("utf-8", errors="replace")
        lines = text.split("\n")
        self.partial = lines.pop()  # an unfinished line waits for the next poll
        for line in lines:
            self._count(line.rstrip("\r"))
            self.partial_counted = 0
        growing = _PYTEST_GROWING.match(self.partial)
        if growing:  # pytest writes a file's characters one by one, the newline last
            for char in growing.group(1)[self.partial_counted :]:
                self._add(char)
            self.partial_counted = len(growing.group(1))

    def _count(self, line: str) -> None:
        found = _PYTEST_PROGRESS.match(line)
        if found:
            for char in found.group(1)[self.partial_counted :]:
                self._add(char)
            return
        for pattern in (_PYTEST_VERBOSE, _DOTS):
            word = pattern.search(line)
            if word:
                self._add(word.group(1))
                return
        tap = _TAP.match(line)
        if tap:
            self._add("skipped" if tap.group(2) else tap.group(1).lower())

    def _add(self, word: str) -> None:
        if word in _PASSED:
            self.passed += 1
        elif word in _FAILED:
            self.failed += 1
        else:
            self.skipped += 1

    def text(self) -> str | None:
        """``12 passed, 1 failed`` so far; None until a test was seen."""
        parts = [
            f"{n} {word}"
            for n, word in (
                (self.passed, "passed"),
                (self.failed, "failed"),
                (self.skipped, "skipped"),
            )
            if n
        ]
        return ", ".join(parts) or None

"""The normalized shape every test-report reader produces.

Each reader (JUnit, pytest-json-report, vitest/jest JSON, Playwright JSON,
TAP, libtest text) turns one report into a :class:`ReportResult`; the
adapters judge only this shape, so a runner's quirks stay inside its reader.

Example::

    result = ReportResult(
        format="junit",
        tests=(TestCase("test_add", file="tests/test_math.py", outcome="passed",
                        claims=("greeting",)),),
        counts=counts_of(tests),
    )
    result.credited_claims()   # -> ("greeting",)

``tests is None`` / ``counts is None`` means *the runner could not say* (no
report, unreadable report) — never zero. Zero counts mean discovery happened
and found nothing.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Literal

from changeloop.outcome import Finding, TestCounts

__all__ = [
    "CaseOutcome",
    "Citation",
    "Finding",
    "ReportResult",
    "TestCase",
    "TestCounts",
    "citations_from_properties",
    "claim_tags",
    "counts_of",
    "strip_ansi",
    "unreadable",
]

# passed: the test body ran and passed. failed: the body failed (or a strict
# xpass). error: setup/teardown/collection broke — counts as failed.
# skipped: never ran its body (skip, xfail, todo, filtered out by name).
CaseOutcome = Literal["passed", "failed", "skipped", "error"]

_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07]*(?:\x07|\x1b\\)")
_CLAIM_TAG = re.compile(r"\[claim:([A-Za-z0-9][A-Za-z0-9._/-]*)\]")


def strip_ansi(text: str) -> str:
    """Remove terminal colour/cursor codes (Playwright keeps them even with FORCE_COLOR=0)."""
    return _ANSI.sub("", text)


def claim_tags(name: str) -> tuple[str, ...]:
    """Claim ids cited as ``[claim:id]`` inside a test name, for runners without properties."""
    return tuple(dict.fromkeys(_CLAIM_TAG.findall(name)))


@dataclass(frozen=True)
class Citation:
    """One test citing one claim (DESIGN.md §11): how deep, the consumer's key, what it ran.

    ``grounding`` is ``None`` when the runner recorded none (no tracer: counts as
    ``not-checked``); ``reason`` says why it is ``not-checked``.
    """

    claim: str
    depth: str | None = None
    ref: str | None = None
    grounding: str | None = None
    reason: str | None = None


_CITATION_KEYS = {"claim-depth": "depth", "claim-ref": "ref"}


def citations_from_properties(pairs: Iterable[tuple[str, str]]) -> tuple[Citation, ...]:
    """Citations from a test's ordered ``(name, value)`` properties (JUnit, pytest-json).

    ``claim`` starts a citation; ``claim-depth``/``claim-ref`` right after it
    qualify it; ``grounding`` (and ``grounding-reason``) describe the whole test
    (one trace per test) and so apply to each of its citations. Plain claim
    properties alone give ``()`` (the shape runners without these keep).
    """
    found: dict[str, dict[str, str]] = {}
    last: str | None = None
    grounding: str | None = None
    reason: str | None = None
    for name, raw in pairs:
        value = raw.strip() if isinstance(raw, str) else ""
        if name == "claim" and value:
            last = value
            found.setdefault(value, {})
        elif name in _CITATION_KEYS and last is not None and value:
            found[last].setdefault(_CITATION_KEYS[name], value)
        elif name == "grounding" and value:
            grounding = value
        elif name == "grounding-reason" and value:
            reason = strip_ansi(value)[:500]
    if grounding is None and not any(found.values()):
        return ()
    return tuple(
        Citation(claim, extra.get("depth"), extra.get("ref"), grounding, reason)
        for claim, extra in found.items()
    )


@dataclass(frozen=True)
class TestCase:
    """One test as the runner reported it, after phase normalization.

    ``file`` is the file or class/suite that holds the test (JUnit
    ``classname``); ``claims`` are the claim ids the test cites (marker,
    JUnit property, annotation or name tag); ``message`` is the first failure
    message, ANSI-stripped and bounded.
    """

    __test__ = False  # not a pytest test class despite the name

    name: str
    outcome: CaseOutcome
    file: str | None = None
    claims: tuple[str, ...] = ()
    message: str | None = None
    duration_ms: int | None = None
    flaky: bool = False  # failed at least once, passed on retry (Playwright, nextest)
    citations: tuple[Citation, ...] = ()  # depth/ref/grounding per cited claim, where recorded

    @property
    def id(self) -> str:
        """A stable display name: ``file::name`` when the file is known."""
        return f"{self.file}::{self.name}" if self.file else self.name

    @property
    def ran(self) -> bool:
        """The body ran (or should have and broke): it counts toward ``minimum``."""
        return self.outcome != "skipped"


def counts_of(tests: Iterable[TestCase]) -> TestCounts:
    """Counts for the receipt: ``error`` is counted as failed; discovered = all listed."""
    passed = failed = skipped = total = 0
    for case in tests:
        total += 1
        if case.outcome == "passed":
            passed += 1
        elif case.outcome == "skipped":
            skipped += 1
        else:
            failed += 1
    return TestCounts(discovered=total, passed=passed, failed=failed, skipped=skipped)


@dataclass(frozen=True)
class ReportResult:
    """One report, normalized.

    - ``format``: the reader that produced it (``junit``, ``pytest-json``,
      ``jest-json``, ``vitest-json``, ``playwright-json``, ``tap``, ``libtest``).
    - ``tests``: per-test outcomes, or ``None`` when the format has no per-test
      detail (libtest summary) or the report could not be read.
    - ``counts``: ``None`` when the runner could not say.
    - ``findings``: classifications and failure messages (bounded, ANSI-free).
    - ``suite_failed``: the report itself shows a failure outside any test
      case (a file that failed to import, an unhandled error, "no tests found").
    - ``error``: why the report could not be read; set ⇒ the result is
      inconclusive at best.
    """

    format: str
    tests: tuple[TestCase, ...] | None
    counts: TestCounts | None
    findings: tuple[Finding, ...] = ()
    tool: str | None = None
    version: str | None = None
    suite_failed: bool = False
    error: str | None = None
    extra: Mapping[str, object] = field(default_factory=dict)  # reader-specific, JSON-able

    @property
    def ran(self) -> int | None:
        """Tests that actually ran (passed + failed), the figure ``minimum`` is checked against."""
        if self.counts is None:
            return None
        return self.counts.passed + self.counts.failed

    def credited_claims(self) -> tuple[str, ...]:
        """Claims cited by at least one test that passed."""
        out: dict[str, None] = {}
        for case in self.tests or ():
            if case.outcome == "passed" and not case.flaky:
                out.update(dict.fromkeys(case.claims))
        return tuple(sorted(out))

    def failed_claims(self) -> tuple[str, ...]:
        """Claims cited by at least one test that failed or errored."""
        out: dict[str, None] = {}
        for case in self.tests or ():
            if case.outcome in ("failed", "error"):
                out.update(dict.fromkeys(case.claims))
        return tuple(sorted(out))


def unreadable(fmt: str, reason: str, findings: Iterable[Finding] = ()) -> ReportResult:
    """A report that exists but cannot be read: the runner could not say."""
    return ReportResult(
        format=fmt,
        tests=None,
        counts=None,
        findings=(*findings, Finding(kind="report-unreadable", message=reason)),
        error=reason,
    )

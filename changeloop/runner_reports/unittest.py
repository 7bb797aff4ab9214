"""Read ``python -m unittest -v`` output (it writes to stderr).

Example::

    result = read(Path("run/test.log"))
    result.counts        # discovered = unittest's own ``Ran N tests``

What unittest prints (3.11, 3.12, 3.13 alike; fixtures under
``tests/fixtures/reports/unittest/``):

- one line per test, ``test_x (pkg.tests.T.test_x) ... ok`` (3.10 and older:
  ``test_x (pkg.tests.T)``); a docstring's first line, when there is one, is
  printed on the next line and carries the status: ``Adds numbers. ... ok``;
- statuses ``ok``, ``FAIL``, ``ERROR``, ``skipped 'why'``, ``expected
  failure`` (counted as skipped), ``unexpected success`` (counted as failed);
- a failing ``subTest`` is an indented line under its test, which then prints
  no status of its own; it fails that one test;
- ``Ran N tests in 0.001s`` then ``OK``, ``OK (skipped=1)``, ``FAILED
  (failures=2, errors=1, skipped=1, expected failures=1, unexpected
  successes=1)`` or, from 3.12, ``NO TESTS RAN`` (exit 5).

``Ran N`` is the discovered count. When the per-test lines do not add up to it
(output without ``-v``; 3.12.1 leaves skipped tests out of ``Ran N``) a
``count-mismatch`` finding says so: tests that ran keep their listed outcome
and skipped takes up the difference, or, with no per-test lines at all, the
outcomes come from the summary. No ``Ran`` line at all (the run died first) ⇒ the
runner could not say: ``counts is None``. A test module that fails to import
is unittest's own failing ``_FailedTest`` test, with finding
``unittest-import-error``. Claims are cited by a ``[claim:id]`` tag in the
test's name or its docstring's first line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from changeloop.outcome import TestCounts
from changeloop.runner_reports.junit import clip
from changeloop.runner_reports.model import (
    CaseOutcome,
    Finding,
    ReportResult,
    TestCase,
    claim_tags,
    counts_of,
    strip_ansi,
    unreadable,
)

FORMAT = "unittest"
_LINE = re.compile(r"^(?P<indent> *)(?P<desc>\S.*?) \.\.\.(?: (?P<rest>.*))?$")
_DESC = re.compile(r"^(?P<method>\S+) \((?P<where>[^()\s]+)\)$")
_RAN = re.compile(r"^Ran (?P<n>\d+) tests? in [0-9.]+m?s$")
_SUMMARY = re.compile(r"^(?P<word>OK|FAILED|NO TESTS RAN)(?: \((?P<kv>[^)]*)\))?$")
_SEPARATOR = re.compile(r"^(={70}|-{70})$")
_BLOCK_HEAD = re.compile(r"^(?P<kind>FAIL|ERROR|UNEXPECTED SUCCESS): (?P<desc>.+)$")
_FAILED_IMPORT = "unittest.loader._FailedTest"
_RANK: dict[CaseOutcome, int] = {"passed": 0, "skipped": 0, "failed": 1, "error": 2}


def status_outcome(text: str) -> CaseOutcome | None:
    """The outcome a status word names, or None when ``text`` is not a status."""
    text = text.strip()
    if text == "ok":
        return "passed"
    if text in ("FAIL", "unexpected success"):
        return "failed"
    if text == "ERROR":
        return "error"
    if text in ("expected failure", "skipped") or text.startswith(("skipped '", 'skipped "')):
        return "skipped"
    return None


@dataclass
class _Entry:
    desc: str
    doc: str | None = None
    outcome: CaseOutcome | None = None
    subtests: list[CaseOutcome] = field(default_factory=list)
    message: str | None = None

    def final(self) -> CaseOutcome:
        found = [o for o in (self.outcome, *self.subtests) if o is not None]
        if not found:
            return "error"  # started, never finished (killed, or the interpreter died)
        return max(found, key=lambda o: _RANK[o]) if self.subtests else found[0]

    def case(self) -> TestCase:
        match = _DESC.match(self.desc)
        name, file = self.desc, None
        if match:
            name, where = match.group("method"), match.group("where")
            file = where[: -len(name) - 1] if where.endswith("." + name) else where
        claims = tuple(dict.fromkeys((*claim_tags(self.desc), *claim_tags(self.doc or ""))))
        message = self.message
        if message is None and self.outcome is None and not self.subtests:
            message = "the test started but printed no result (the run was cut short)"
        return TestCase(name=name, outcome=self.final(), file=file, claims=claims, message=message)


def read(source: Path | bytes) -> ReportResult:
    """Parse unittest text (a path or bytes); never raises on odd input."""
    try:
        raw = source.read_bytes() if isinstance(source, Path) else source
    except OSError as exc:
        return unreadable(FORMAT, f"cannot read unittest output: {exc}")
    return parse(strip_ansi(raw.decode("utf-8", errors="replace")))


def _summary_numbers(kv: str | None) -> dict[str, int]:
    out: dict[str, int] = {}
    for part in (kv or "").split(","):
        key, _, value = part.strip().partition("=")
        if value.strip().isdigit():
            out[key.strip()] = int(value)
    return out


def parse(text: str) -> ReportResult:
    """Normalize one unittest run's output."""
    entries: list[_Entry] = []
    pending: str | None = None  # a description line whose docstring line carries the status
    ran: int | None = None
    summary: tuple[str, dict[str, int]] | None = None
    in_details = False
    blocks: dict[str, list[str]] = {}
    block: list[str] | None = None
    lines = [line.rstrip() for line in text.splitlines()]
    for line in lines:
        ran_match = _RAN.match(line)
        if ran_match:
            ran = int(ran_match.group("n"))
            in_details, block = True, None
            continue
        summary_match = _SUMMARY.match(line)
        if summary_match and (ran is not None or line.startswith("NO TESTS RAN")):
            summary = (summary_match.group("word"), _summary_numbers(summary_match.group("kv")))
            continue
        if _SEPARATOR.match(line):
            in_details = True
            continue
        if in_details:
            head = _BLOCK_HEAD.match(line)
            if head:
                block = blocks.setdefault(head.group("desc"), [])
            elif block is not None and line.strip():
                block.append(line.strip())
            continue
        found = _LINE.match(line)
        if found:
            desc, rest = found.group("desc"), found.group("rest") or ""
            outcome = status_outcome(rest)
            if found.group("indent"):
                if entries and outcome is not None:  # a subTest result of the last test
                    entries[-1].subtests.append(outcome)
                continue
            if pending is not None and not _DESC.match(desc):
                entries.append(_Entry(desc=pending, doc=desc, outcome=outcome))
            else:
                entries.append(_Entry(desc=desc, outcome=outcome))
            pending = None
            continue
        if _DESC.match(line):
            pending = line
            continue
        late = status_outcome(line)
        if (
            late is not None
            and entries
            and entries[-1].outcome is None
            and not entries[-1].subtests
            and line == line.strip()
        ):
            entries[-1].outcome = late  # the test wrote to stderr after " ... "
    for desc, body in blocks.items():
        target = next((e for e in entries if desc == e.desc or desc.startswith(e.desc + " ")), None)
        if target is not None and body and target.message is None:
            target.message = clip(body[-1], 500)
    return _result(entries, ran, summary)


def _result(
    entries: list[_Entry], ran: int | None, summary: tuple[str, dict[str, int]] | None
) -> ReportResult:
    tests = tuple(e.case() for e in entries)
    findings: list[Finding] = []
    for entry, case in zip(entries, tests, strict=True):
        if case.outcome in ("skipped", "passed"):
            continue
        if _FAILED_IMPORT in entry.desc:
            why = case.message or "failed to import"
            findings.append(
                Finding(
                    kind="unittest-import-error",
                    severity="error",
                    message=clip(f"{case.name}: {why}"),
                )
            )
        else:
            findings.append(
                Finding(
                    kind="test-failed", message=clip(f"{case.id}: {case.message or case.outcome}")
                )
            )
    word, numbers = summary if summary is not None else (None, {})
    if ran is None and word == "NO TESTS RAN":
        ran = 0
    if ran is None:
        return ReportResult(
            format=FORMAT,
            tests=tests,
            counts=None,
            tool="unittest",
            findings=tuple(findings),
            suite_failed=bool(entries),
            error="no `Ran N tests` line in the output (the run ended before unittest's "
            "summary, or this is not unittest output)",
        )
    counts = counts_of(tests)
    if counts.discovered != ran:
        findings.append(
            Finding(
                kind="count-mismatch",
                message=f"unittest ran {ran} test(s) but printed {counts.discovered} per-test "
                "result line(s); the discovered count is unittest's `Ran "
                f"{ran}` (run with -v so each test is listed)",
            )
        )
        counts = _from_summary(ran, counts, numbers, bool(entries))
    suite_failed = False
    if word is None:
        suite_failed = True
        findings.append(
            Finding(
                kind="suite-error",
                severity="error",
                message="unittest printed `Ran N tests` but no OK/FAILED "
                "summary (the run was cut short)",
            )
        )
    elif word == "FAILED" and counts.failed == 0:
        suite_failed = True
        findings.append(
            Finding(
                kind="suite-error",
                severity="error",
                message="unittest says FAILED but no test is listed as failed",
            )
        )
    return ReportResult(
        format=FORMAT,
        tests=tests,
        counts=counts,
        findings=tuple(findings),
        tool="unittest",
        suite_failed=suite_failed,
        extra={"ran": ran, "result": word, **numbers},
    )


def _from_summary(
    ran: int, lines: TestCounts, numbers: dict[str, int], have_lines: bool
) -> TestCounts:
    """Counts that add up to ``Ran N`` when the per-test lines do not."""
    if have_lines:
        # Tests that ran keep their outcome; skipped takes up the difference
        # (3.12.1 leaves skipped tests out of `Ran N`).
        failed = min(ran, lines.failed)
        passed = min(ran - failed, lines.passed)
        return TestCounts(
            discovered=ran, passed=passed, failed=failed, skipped=ran - failed - passed
        )
    failed = min(
        ran,
        numbers.get("failures", 0)
        + numbers.get("errors", 0)
        + numbers.get("unexpected successes", 0),
    )
    skipped = min(ran - failed, numbers.get("skipped", 0) + numbers.get("expected failures", 0))
    return TestCounts(discovered=ran, passed=ran - failed - skipped, failed=failed, skipped=skipped)

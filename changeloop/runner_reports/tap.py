"""Read TAP 13/14 as ``node --test --test-reporter=tap`` (and other producers) write it.

Example::

    result = read(Path("test-results/unit.tap"))

Nested subtests are indented by four spaces and printed before their parent's
own ``ok``/``not ok`` line. node marks its suites (``describe``) with
``type: 'suite'`` in the YAML block: in such a stream only marked lines are
suites, so a test with subtests (``t.test``) counts as a test, as node's own
totals do; in a stream without marks a result line right after deeper ones is
a suite. A failing suite with no failing child is still a failure. A test is identified by its suite
path (its name is the enclosing suites' names and its own joined by
`` > ``, as node's JUnit is read), and a
``[claim:id]`` tag in a suite's name cites for every test inside it.
``# SKIP`` and ``# TODO`` are skipped. A file that fails to load is one
failing test named by its path. A ``# claim: <id> [depth=…] [ref=…]``
diagnostic right after a test's result, at its indentation, cites for that test
(node: ``t.diagnostic("claim: slug depth=unit")``).

The stream must account for itself: a plan (``1..N``) whose count
the results do not reach or exceed, a missing top-level plan, or a ``Bail
out!`` line make the suite failed with a finding saying which
(``tap-plan-mismatch``, ``tap-plan-missing``, ``tap-bail-out``), whatever the
exit code. No result and no plan at all ⇒ unreadable.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from changeloop.runner_reports.junit import clip
from changeloop.runner_reports.model import (
    CaseOutcome,
    Citation,
    Finding,
    ReportResult,
    TestCase,
    claim_note,
    claim_tags,
    counts_of,
    unreadable,
)

FORMAT = "tap"
SUITE_SEPARATOR = " > "
_RESULT = re.compile(r"^(?P<indent> *)(?P<ok>not ok|ok)\b(?: +\d+)?(?: *-)? *(?P<rest>.*)$")
_DIRECTIVE = re.compile(r"\s+#\s*(?P<kind>SKIP|TODO)\b.*$", re.IGNORECASE)
_PLAN = re.compile(r"^(?P<indent> *)1\.\.(?P<count>\d+)\b")
_BAIL = re.compile(r"^ *Bail out!(?P<reason>.*)$")
_YAML_START = re.compile(r"^(?P<indent> *)---\s*$")
_YAML_END = re.compile(r"^ *\.\.\.\s*$")
_ERROR = re.compile(r"^ +error: *(?P<msg>.*)$")
_SUITE_TYPE = re.compile(r"^ +type: *['\"]?suite['\"]?\s*$")
_NOTE = re.compile(r"^(?P<indent> *)# (?P<text>claim:.*)$")


@dataclass
class _Entry:
    indent: int
    name: str
    outcome: CaseOutcome
    message: str | None = None
    marked: bool = False  # node's YAML says ``type: 'suite'``
    children: list[int] = field(default_factory=list)
    notes: list[Citation] = field(default_factory=list)  # ``# claim: …`` diagnostics


@dataclass
class _Block:
    """The result lines of one nesting level between two lines of a shallower level."""

    results: int = 0
    plan: int | None = None
    plan_line: int = 0


def read(source: Path | bytes) -> ReportResult:
    """Parse a TAP stream; unreadable ⇒ ``counts is None`` with the reason."""
    try:
        raw = source.read_bytes() if isinstance(source, Path) else source
        text = raw.decode("utf-8", errors="replace")
    except OSError as exc:
        return unreadable(FORMAT, f"TAP report is not readable: {exc}")
    return parse(text)


class _Parser:
    """One pass over the lines: results, their YAML blocks, plans per level, bail-outs."""

    def __init__(self) -> None:
        self.entries: list[_Entry] = []
        self.pending: dict[int, list[int]] = {}  # results not yet adopted by a parent, by indent
        self.blocks: dict[int, _Block] = {}
        self.findings: list[Finding] = []
        self.saw_plan = False
        self.bailed = False
        self.typed = False  # some result is marked ``type: 'suite'`` (node)
        self.broken = False  # a plan the results do not meet, or no top-level plan
        self.top: int | None = None  # indent of the top level (the shallowest result or plan)
        self.yaml_indent: int | None = None
        self.error_lines: list[str] | None = None  # an ``error: |-`` block being read
        self.error_indent = 0

    def feed(self, lineno: int, line: str) -> None:
        if self.yaml_indent is not None:
            self._yaml(line)
            return
        bail = _BAIL.match(line)
        if bail:
            self.bailed = True
            reason = bail.group("reason").strip() or "no reason given"
            self.findings.append(
                Finding(
                    kind="tap-bail-out",
                    severity="error",
                    message=clip(f"Bail out! {reason} (line {lineno})"),
                )
            )
            return
        plan = _PLAN.match(line)
        if plan:
            self._plan(lineno, len(plan.group("indent")), int(plan.group("count")))
            return
        found = _RESULT.match(line)
        if found:
            self._result(found)
            return
        note = _NOTE.match(line)
        if note and self.entries and len(note.group("indent")) == self.entries[-1].indent:
            cite = claim_note(note.group("text"))
            if cite is not None:
                self.entries[-1].notes.append(cite)
            return
        start = _YAML_START.match(line)
        if start and self.entries and len(start.group("indent")) > self.entries[-1].indent:
            self.yaml_indent = len(start.group("indent"))

    def _yaml(self, line: str) -> None:
        if _YAML_END.match(line):
            self._end_error()
            self.yaml_indent = None
            return
        entry = self.entries[-1]
        indent = len(line) - len(line.lstrip(" "))
        if self.error_lines is not None:
            if not line.strip() or indent > self.error_indent:
                if line.strip() and len(self.error_lines) < 5:
                    self.error_lines.append(line.strip())
                return
            self._end_error()
        if _SUITE_TYPE.match(line):
            entry.marked = self.typed = True
            return
        err = _ERROR.match(line)
        if err and entry.outcome == "failed" and entry.message is None:
            msg = err.group("msg").strip()
            if msg in ("|", "|-", "|+", ">", ">-", ">+"):
                self.error_lines, self.error_indent = [], indent  # a block scalar follows
            elif msg:
                entry.message = clip(msg.strip("'\""), 500)

    def _end_error(self) -> None:
        if self.error_lines:
            self.entries[-1].message = clip(" ".join(self.error_lines), 500)
        self.error_lines = None

    def _plan(self, lineno: int, indent: int, count: int) -> None:
        self.saw_plan = True
        if self.top is None or indent < self.top:
            self.top = indent
        self._close_deeper(indent)
        block = self.blocks.setdefault(indent, _Block())
        if block.plan is None:
            block.plan, block.plan_line = count, lineno

    def _result(self, found: re.Match[str]) -> None:
        indent = len(found.group("indent"))
        if self.top is None or indent < self.top:
            self.top = indent
        rest = found.group("rest")
        directive = _DIRECTIVE.search(rest)
        name = _DIRECTIVE.sub("", rest).strip()
        passed = found.group("ok") == "ok"
        outcome: CaseOutcome = "skipped" if directive else "passed" if passed else "failed"
        entry = _Entry(indent, name, outcome)
        index = len(self.entries)
        for level in sorted(k for k in self.pending if k > indent):
            entry.children.extend(self.pending.pop(level))
        self._close_deeper(indent)
        self.blocks.setdefault(indent, _Block()).results += 1
        self.pending.setdefault(indent, []).append(index)
        self.entries.append(entry)

    def _close_deeper(self, indent: int) -> None:
        for level in sorted((k for k in self.blocks if k > indent), reverse=True):
            self._check(level, self.blocks.pop(level))

    def _check(self, level: int, block: _Block) -> None:
        if block.plan is None or block.plan == block.results or self.bailed:
            return
        where = "top level" if level == self.top else f"a subtest at indent {level}"
        short = "short" if block.results < block.plan else "exceeded"
        self.broken = True
        self.findings.append(
            Finding(
                kind="tap-plan-mismatch",
                severity="error",
                message=f"plan 1..{block.plan} (line {block.plan_line}) {short}: "
                f"{block.results} result(s) at {where}",
            )
        )

    def finish(self) -> bool:
        """Close every level; True when the stream does not account for itself."""
        for level in sorted(self.blocks, reverse=True):
            self._check(level, self.blocks[level])
        top = self.blocks.get(self.top) if self.top is not None else None
        if self.entries and not self.bailed and (top is None or top.plan is None):
            self.broken = True
            self.findings.append(
                Finding(
                    kind="tap-plan-missing",
                    severity="error",
                    message="no top-level plan (1..N): the TAP stream may be truncated",
                )
            )
        return self.bailed or self.broken


def parse(text: str) -> ReportResult:
    """Normalize a TAP document."""
    parser = _Parser()
    for lineno, line in enumerate(text.splitlines(), start=1):
        parser.feed(lineno, line)
    entries = parser.entries
    if not entries and not parser.saw_plan and not parser.bailed:
        return unreadable(FORMAT, "no TAP plan or result line found (truncated or not TAP)")
    suite_failed = parser.finish()
    findings = list(parser.findings)
    paths: dict[int, tuple[str, ...]] = {}
    for index in range(len(entries) - 1, -1, -1):  # parents come after their children
        for child in entries[index].children:
            paths[child] = (*paths.get(index, ()), entries[index].name)
    tests: list[TestCase] = []
    for index, entry in enumerate(entries):
        suites = paths.get(index, ())
        if entry.marked or (entry.children and not parser.typed):
            children_failed = any(entries[c].outcome == "failed" for c in entry.children)
            if entry.outcome == "failed" and not children_failed:
                suite_failed = True
                name = SUITE_SEPARATOR.join((*suites, entry.name))
                findings.append(
                    Finding(
                        kind="suite-error",
                        severity="error",
                        message=clip(f"{name}: {entry.message or 'failed'}"),
                    )
                )
            continue
        claims = tuple(
            dict.fromkeys(
                [tag for title in (*suites, entry.name) for tag in claim_tags(title)]
                + [note.claim for note in entry.notes]
            )
        )
        case = TestCase(
            name=SUITE_SEPARATOR.join((*suites, entry.name)),
            outcome=entry.outcome,
            claims=claims,
            message=entry.message,
            citations=tuple(entry.notes),
        )
        tests.append(case)
        if case.outcome == "failed":
            findings.append(
                Finding(kind="test-failed", message=clip(f"{case.id}: {case.message or 'failed'}"))
            )
    return ReportResult(
        format=FORMAT,
        tests=tuple(tests),
        counts=counts_of(tests),
        findings=tuple(findings),
        suite_failed=suite_failed,
    )

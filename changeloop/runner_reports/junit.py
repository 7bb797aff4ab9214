"""Read JUnit XML (pytest, vitest, jest-junit, node --test, cargo-nextest, Playwright).

Example::

    result = read(Path(".changeloop/reports/test.xml"))
    result.counts            # TestCounts(discovered=3, passed=2, failed=1, skipped=0)

Rules (REPORTS.md): a ``<testcase>`` with ``<failure>`` failed, with
``<error>`` errored (setup/teardown: counted as failed), with ``<skipped>``
(including pytest's xfail) was skipped, else passed. Repeated
``(classname, name)`` pairs are one test, worst outcome wins, only where the
producer is known to write one test twice: pytest writes a failing call and a
failing teardown as two testcases. Everywhere else each ``<testcase>`` is a test
(mocha's suites may hold two tests of one title, and both ran). pytest's collection
errors and module skips are pseudo-tests with an empty classname: they become
findings, never tests. Claims: ``<property name="claim" value="id"/>`` (with
``claim-depth`` / ``claim-ref`` after it), ``[claim:id]`` tags in the name, and
for node's reporter a ``<!-- claim: id depth=… -->`` comment right after a
``<testcase>`` (its ``t.diagnostic``). The ``tests`` attribute is not trusted.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path

from changeloop.runner_reports.model import (
    CaseOutcome,
    Citation,
    Finding,
    ReportResult,
    TestCase,
    citations_from_properties,
    claim_note,
    claim_tags,
    counts_of,
    strip_ansi,
    unreadable,
)

FORMAT = "junit"
SUITE_SEPARATOR = " > "  # between suite (describe) names in a test's identity
_LEAVES = ("properties", "property", "system-out", "system-err")
MESSAGE_LIMIT = 2000
_RANK: dict[CaseOutcome, int] = {"skipped": 0, "passed": 1, "failed": 2, "error": 3}


def clip(text: str, limit: int = MESSAGE_LIMIT) -> str:
    """ANSI-free, stripped, at most ``limit`` characters."""
    text = strip_ansi(text).strip()
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _tool(root: ET.Element) -> str | None:
    name = (root.get("name") or "").lower()
    for tool in ("pytest", "vitest", "jest", "nextest", "playwright"):
        if tool in name:
            return tool
    suite = root if root.tag == "testsuite" else root.find("testsuite")
    suite_name = (suite.get("name") or "").lower() if suite is not None else ""
    if suite_name == "pytest":
        return "pytest"
    if suite_name == "mocha tests":  # mocha's xunit reporter
        return "mocha"
    return None


# Producers that write one test as several <testcase>s (a phase each): merged by name.
_PHASED = frozenset({"pytest"})


def read(source: Path | bytes) -> ReportResult:
    """Parse a JUnit XML report; unreadable or truncated ⇒ ``counts is None`` with the reason."""
    try:
        raw = source.read_bytes() if isinstance(source, Path) else source
        node = _is_node(raw)
        # node writes a test's diagnostics as comments: keep them there
        builder = ET.TreeBuilder(insert_comments=node)
        parser = ET.XMLParser(target=builder)  # noqa: S314 — local file the user's runner wrote
        root = ET.fromstring(raw, parser=parser)  # noqa: S314
    except (OSError, ET.ParseError) as exc:
        return unreadable(FORMAT, f"JUnit XML report is not readable XML: {exc}")
    if root.tag not in ("testsuites", "testsuite"):
        return unreadable(FORMAT, f"not a JUnit report (root element <{root.tag}>)")
    tool = _tool(root)
    node = tool is None and node
    notes = _notes(root) if node else {}
    cases: dict[tuple[object, ...], TestCase] = {}
    findings: list[Finding] = []
    suite_failed = False
    for el, suites in _cases(root):
        name = el.get("name") or ""
        classname = el.get("classname") or el.get("file") or ""
        outcome, message = _outcome(el)
        if outcome in ("failed", "error") and _fixture_missing(el):
            findings.append(
                Finding(
                    kind="pytest-fixture-error",
                    severity="error",
                    message=clip(f"{classname}::{name}: {_fixture_missing(el)}"),
                )
            )
        if tool == "pytest" and not classname:
            # pytest pseudo-test: a collection error or a module-level skip.
            if outcome == "skipped":
                continue
            suite_failed = True
            detail = " ".join(c.text or "" for c in el if c.tag in ("error", "failure"))
            findings.append(_collection_finding(name, detail or message or ""))
            continue
        claims = tuple(
            dict.fromkeys(
                [
                    (p.get("value") or "").strip()
                    for p in el.iter("property")
                    if p.get("name") == "claim" and (p.get("value") or "").strip()
                ]
                + [tag for title in (*suites, name) for tag in claim_tags(title)]
            )
        )
        citations = read_citations(el) + notes.get(id(el), ())
        claims = tuple(dict.fromkeys([*claims, *(c.claim for c in notes.get(id(el), ()))]))
        if node:
            # node's classname is always "test": the suite path is the identity, and
            # every <testcase> is one test (node never splits a test into phases).
            name, classname = SUITE_SEPARATOR.join((*suites, name)), ""
        case = TestCase(
            name=name,
            outcome=outcome,
            file=classname or None,
            claims=claims,
            message=message,
            duration_ms=_ms(el.get("time")),
            citations=citations,
        )
        # one <testcase> is one test, except where the producer repeats a test by phase
        phased = tool in _PHASED and not node
        key: tuple[object, ...] = (suites, classname, name) + (() if phased else (len(cases),))
        old = cases.get(key)
        if old is None or _RANK[case.outcome] > _RANK[old.outcome]:
            merged = (
                case
                if old is None
                else TestCase(
                    name,
                    case.outcome,
                    case.file,
                    tuple(dict.fromkeys(old.claims + case.claims)),
                    case.message,
                    case.duration_ms,
                    citations=_merge_citations(old.citations, case.citations),
                )
            )
            cases[key] = merged
    tests = tuple(cases.values())
    if node:
        findings.extend(_node_total_check(raw, len(tests)))
    for case in tests:
        if case.outcome in ("failed", "error"):
            findings.extend(case_findings(case, tool))
    return ReportResult(
        format=FORMAT,
        tests=tests,
        counts=counts_of(tests),
        findings=tuple(findings),
        tool=tool,
        suite_failed=suite_failed,
    )


def read_citations(el: ET.Element) -> tuple[Citation, ...]:
    """Citations from a testcase's properties (docs/grounding.md), in document order."""
    return citations_from_properties(
        (p.get("name") or "", p.get("value") or "") for p in el.iter("property")
    )


def _notes(root: ET.Element) -> dict[int, tuple[Citation, ...]]:
    """``id(<testcase>)`` -> the ``<!-- claim: … -->`` comments right after it (node)."""
    out: dict[int, list[Citation]] = {}
    for parent in root.iter():
        last: ET.Element | None = None
        for child in parent:
            if child.tag == "testcase":
                last = child
            elif child.tag is ET.Comment and last is not None:  # type: ignore[comparison-overlap]
                cite = claim_note(child.text or "")
                if cite is not None:
                    out.setdefault(id(last), []).append(cite)
            else:
                last = None
    return {key: tuple(value) for key, value in out.items()}


def _merge_citations(old: tuple[Citation, ...], new: tuple[Citation, ...]) -> tuple[Citation, ...]:
    """One citation per claim; the first one that says its depth wins."""
    out: dict[str, Citation] = {c.claim: c for c in old}
    for c in new:
        if c.claim not in out or (out[c.claim].depth is None and c.depth is not None):
            out[c.claim] = c
    return tuple(out.values())


def _cases(root: ET.Element) -> Iterator[tuple[ET.Element, tuple[str, ...]]]:
    """Every ``<testcase>``, in document order, with the names of the ``<testsuite>``s around it."""
    todo: list[tuple[ET.Element, tuple[str, ...]]] = [(root, ())]
    while todo:
        el, suites = todo.pop()
        if el.tag == "testcase":
            yield el, suites
            continue
        if el.tag == "testsuite" and el.get("name"):
            suites = (*suites, el.get("name") or "")
        todo.extend((child, suites) for child in reversed(el) if child.tag not in _LEAVES)


def _is_node(raw: bytes) -> bool:
    """node --test's JUnit reporter: totals only as ``<!-- tests N -->`` comments (REPORTS.md)."""
    return b"<!-- tests " in raw and b"<!-- suites " in raw


_NODE_TOTAL = re.compile(rb"<!-- tests (\d+) -->")


def _node_total_check(raw: bytes, listed: int) -> list[Finding]:
    """node's JUnit shape loses what a suite is: say so when its own total disagrees."""
    found = _NODE_TOTAL.search(raw)
    if found is None or int(found.group(1)) == listed:
        return []
    message = (
        f"node reports {int(found.group(1))} test(s) but its JUnit lists {listed}: node writes"
        " an empty or skipped describe as a test and a test with subtests as a suite"
        " (its TAP reporter keeps them apart)"
    )
    return [Finding(kind="count-mismatch", severity="warning", message=message)]


def _outcome(el: ET.Element) -> tuple[CaseOutcome, str | None]:
    failure = el.find("failure")
    error = el.find("error")
    if error is not None:
        return "error", clip(error.get("message") or error.text or "error")
    if failure is not None or el.get("failure"):
        node = failure if failure is not None else el
        text = node.get("message") or node.get("failure") or node.text or "failed"
        return "failed", clip(text)
    skipped = el.find("skipped")
    if skipped is not None:
        return "skipped", clip(skipped.get("message") or "") or None
    return "passed", None


def _ms(value: str | None) -> int | None:
    try:
        return round(float(value) * 1000) if value else None
    except ValueError:
        return None


def _collection_finding(name: str, message: str) -> Finding:
    kind = (
        "pytest-import-error"
        if "ImportError while importing" in message or "ModuleNotFoundError" in message
        else "pytest-collection-error"
    )
    return Finding(kind=kind, message=clip(f"{name}: {message}"), severity="error", file=name)


FIXTURE_MISSING = re.compile(r"fixture '[^']+' not found")


def _fixture_missing(el: ET.Element) -> str | None:
    for child in el:
        if child.tag in ("error", "failure"):
            found = FIXTURE_MISSING.search(f"{child.get('message') or ''} {child.text or ''}")
            if found:
                return found.group(0)
    return None


def case_findings(case: TestCase, tool: str | None) -> list[Finding]:  # noqa: ARG001 (one signature for every tool)
    """The failure message of one failed test, classified where pytest says why."""
    message = case.message or case.outcome
    out: list[Finding] = []
    out.append(Finding(kind="test-failed", message=clip(f"{case.id}: {message}")))
    return out

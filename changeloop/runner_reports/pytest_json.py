"""Read a pytest-json-report file (``pytest --json-report --json-report-file=F``).

Example::

    result = read(Path(".changeloop/reports/test.json"))

Phase rules: a test passed only when its ``call`` phase passed (a green
``setup`` with no ``call`` is skipped); the worst phase wins (a teardown error
after a passing call is ``error``); ``xfailed`` is skipped, ``xpassed`` (not
strict) passed — a strict xpass is already ``failed`` in the report.
Collection errors live only in ``collectors[]`` and become findings.
discovered = collected − deselected (deselected tests never appear).
Claims: ``metadata.claims`` and ``user_properties`` ``{"claim": id}`` from the
changeloop pytest plugin.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from changeloop.runner_reports.junit import FIXTURE_MISSING, clip
from changeloop.runner_reports.model import (
    CaseOutcome,
    Finding,
    ReportResult,
    TestCase,
    citations_from_properties,
    claim_tags,
    counts_of,
    unreadable,
)

FORMAT = "pytest-json"


def read(source: Path | bytes) -> ReportResult:
    """Parse the report; unreadable or truncated ⇒ ``counts is None`` with the reason."""
    try:
        raw = source.read_bytes() if isinstance(source, Path) else source
        doc = json.loads(raw)
    except (OSError, ValueError) as exc:
        return unreadable(FORMAT, f"pytest-json-report file is not readable JSON: {exc}")
    if (
        not isinstance(doc, dict)
        or not isinstance(doc.get("tests", []), list)
        or not isinstance(doc.get("summary"), dict)
    ):
        return unreadable(FORMAT, "not a pytest-json-report file (no 'summary' object)")
    return parse(doc)


def parse(doc: Mapping[str, Any]) -> ReportResult:
    """Normalize an already-decoded report."""
    findings: list[Finding] = []
    suite_failed = False
    for col in doc.get("collectors") or []:
        if not isinstance(col, dict) or col.get("outcome") != "failed":
            continue
        suite_failed = True
        text = str(col.get("longrepr") or "")
        kind = (
            "pytest-import-error"
            if "ImportError while importing" in text
            else "pytest-collection-error"
        )
        node = str(col.get("nodeid") or "")
        findings.append(
            Finding(kind=kind, message=clip(f"{node}: {text}"), severity="error", file=node or None)
        )
    tests: list[TestCase] = []
    for raw in doc.get("tests") or []:
        if isinstance(raw, dict):
            case, extra = _case(raw)
            tests.append(case)
            findings.extend(extra)
    return ReportResult(
        format=FORMAT,
        tests=tuple(tests),
        counts=counts_of(tests),
        findings=tuple(findings),
        tool="pytest",
        suite_failed=suite_failed,
        extra={"exitcode": doc.get("exitcode"), "summary": dict(doc.get("summary") or {})},
    )


def _phase(raw: Mapping[str, Any], when: str) -> Mapping[str, Any] | None:
    value = raw.get(when)
    return value if isinstance(value, dict) else None


def _case(raw: Mapping[str, Any]) -> tuple[TestCase, list[Finding]]:
    nodeid = str(raw.get("nodeid") or "")
    file, _, name = nodeid.partition("::")
    setup, call, teardown = (_phase(raw, w) for w in ("setup", "call", "teardown"))
    reported = str(raw.get("outcome") or "")
    outcome: CaseOutcome
    message: str | None = None
    broken = [
        (w, p)
        for w, p in (("setup", setup), ("call", call), ("teardown", teardown))
        if p is not None and p.get("outcome") == "failed"
    ]
    if reported == "xfailed":
        outcome = "skipped"
    elif any(w != "call" for w, _ in broken):
        outcome = "error"
    elif broken:
        outcome = "failed"
    elif call is not None and call.get("outcome") == "passed" and reported in ("passed", "xpassed"):
        outcome = "passed"
    elif reported in ("failed", "error"):
        outcome = "failed" if reported == "failed" else "error"
    else:
        outcome = "skipped"  # green setup without a call, or a skip
    findings: list[Finding] = []
    if broken:
        when, phase = broken[0]
        crash = phase.get("crash")
        text = str(phase.get("longrepr") or "")
        head = crash.get("message") if isinstance(crash, dict) else None
        message = clip(f"failed on {when}: {head or text}")
        missing = FIXTURE_MISSING.search(text)
        if missing:
            findings.append(
                Finding(
                    kind="pytest-fixture-error",
                    severity="error",
                    message=clip(f"{nodeid}: {missing.group(0)}"),
                )
            )
        findings.append(Finding(kind="test-failed", message=clip(f"{nodeid}: {message}")))
    claims: dict[str, None] = {}
    meta = raw.get("metadata")
    if isinstance(meta, dict) and isinstance(meta.get("claims"), list):
        claims.update(dict.fromkeys(str(c) for c in meta["claims"]))
    for prop in raw.get("user_properties") or []:
        if isinstance(prop, dict) and isinstance(prop.get("claim"), str):
            claims[prop["claim"]] = None
    claims.update(dict.fromkeys(claim_tags(nodeid)))
    duration = sum(float(p.get("duration") or 0) for p in (setup, call, teardown) if p)
    pairs = [  # user_properties in order: claim, claim-depth, claim-ref, grounding
        (str(k), str(v))
        for prop in raw.get("user_properties") or []
        if isinstance(prop, dict)
        for k, v in prop.items()
    ]
    return TestCase(
        name=name or nodeid,
        outcome=outcome,
        file=file or None,
        claims=tuple(claims),
        message=message,
        duration_ms=round(duration * 1000),
        citations=citations_from_properties(pairs),
    ), findings

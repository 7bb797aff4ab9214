"""Read Playwright's ``--reporter=json`` report into a :class:`ReportResult`.

Example::

    result = read(Path("test-results/browser.json"))
    result.credited_claims()            # claims cited by tests that really passed
    [t.id for t in result.tests or () if t.flaky]

Crediting rule (REPORTS.md, Playwright): a test is ``passed`` only when
``expectedStatus == "passed"``, ``status == "expected"`` and its last result
passed. That excludes skipped tests, never-run ones (``results: []`` or a
``skipped``/``interrupted`` last result) and ``test.fail()`` tests (expected to
fail: they count as passing for the suite but cite no claim). A flaky test
(failed, then passed on retry) is ``passed`` with ``flaky=True``; whether it
credits anything is the adapter's decision (``allowFlaky``).

Claims are ``{type: "claim", description: "<id>"}`` annotations. Playwright
already copies describe-level annotations onto each test; runtime-pushed ones
sit on the results, so both places are read.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from changeloop.runner_reports.model import (
    Finding,
    ReportResult,
    TestCase,
    counts_of,
    strip_ansi,
    unreadable,
)

FORMAT = "playwright-json"
_MESSAGE_LIMIT = 2000


def read(source: Path | bytes) -> ReportResult:
    """Parse a Playwright JSON report (a path or its bytes); unreadable ⇒ ``counts is None``.

    The exit code is the adapter's to judge (a report never overrides a failing exit).
    """
    try:
        raw = source.read_bytes() if isinstance(source, Path) else source
        doc = json.loads(raw)
    except (OSError, ValueError) as exc:
        return unreadable(FORMAT, f"Playwright JSON report is not readable JSON: {exc}")
    if not isinstance(doc, dict) or not isinstance(doc.get("suites"), list):
        return unreadable(FORMAT, "not a Playwright JSON report (no top-level 'suites' list)")
    try:
        return parse(doc)
    except (TypeError, AttributeError, KeyError, IndexError, ValueError) as exc:
        return unreadable(FORMAT, f"Playwright JSON report has an unexpected shape: {exc}")


def parse(doc: Mapping[str, Any]) -> ReportResult:
    """Normalize an already-decoded report."""
    tests: list[TestCase] = []
    expected_failures: list[str] = []
    findings: list[Finding] = []
    for titles, file, spec, test in _walk(doc.get("suites") or [], (), None):
        case, expected_failure = _case(titles, file, spec, test)
        tests.append(case)
        if expected_failure:
            expected_failures.append(case.id)
        if case.outcome == "failed" and case.message:
            findings.append(Finding(kind="test-failed", message=f"{case.id}: {case.message}"))
    suite_failed = False
    for err in doc.get("errors") or []:
        message = _clip(strip_ansi(str(_get(err, "message") or err)))
        suite_failed = True
        kind = "no-tests-collected" if "No tests found" in message else "suite-error"
        findings.append(Finding(kind=kind, message=message))
    config = doc.get("config")
    version = _get(config, "version")
    extra: dict[str, object] = {}
    if expected_failures:
        extra["expectedFailures"] = expected_failures
    flaky = [t.id for t in tests if t.flaky]
    if flaky:
        extra["flaky"] = flaky
    stats = doc.get("stats")
    if isinstance(stats, dict):
        extra["stats"] = {k: v for k, v in stats.items() if isinstance(v, int)}
    return ReportResult(
        format=FORMAT,
        tests=tuple(tests),
        counts=counts_of(tests),
        findings=tuple(findings),
        tool="playwright",
        version=version if isinstance(version, str) else None,
        suite_failed=suite_failed,
        extra=extra,
    )


def annotation_claims(annotations: Any) -> tuple[str, ...]:
    """Claim ids from a list of ``{type, description}`` annotations, in order, deduplicated."""
    out: dict[str, None] = {}
    for note in annotations if isinstance(annotations, list) else ():
        if _get(note, "type") == "claim":
            desc = _get(note, "description")
            if isinstance(desc, str) and desc.strip():
                out[desc.strip()] = None
    return tuple(out)


def _walk(
    suites: Sequence[Any], titles: tuple[str, ...], file: str | None
) -> Iterator[tuple[tuple[str, ...], str | None, Mapping[str, Any], Mapping[str, Any]]]:
    """Yield (describe titles, file, spec, test) for every test, depth first."""
    for suite in suites:
        if not isinstance(suite, dict):
            continue
        suite_file = suite.get("file") if isinstance(suite.get("file"), str) else file
        # The top-level suite of a file is titled with the file path: not a describe.
        own = () if file is None else (str(suite.get("title", "")),)
        path = titles + tuple(t for t in own if t)
        for spec in suite.get("specs") or []:
            if not isinstance(spec, dict):
                continue
            for test in spec.get("tests") or []:
                if isinstance(test, dict):
                    yield path, spec.get("file") or suite_file, spec, test
        yield from _walk(suite.get("suites") or [], path, suite_file)


def _case(
    titles: tuple[str, ...], file: str | None, spec: Mapping[str, Any], test: Mapping[str, Any]
) -> tuple[TestCase, bool]:
    """One Playwright test (a spec × project × repeat) → a TestCase; True if ``test.fail()``."""
    results = [r for r in test.get("results") or [] if isinstance(r, dict)]
    last = results[-1] if results else None
    last_status = _get(last, "status")
    expected = test.get("expectedStatus")
    status = test.get("status")
    notes = list(test.get("annotations") or [])
    if last is not None:
        notes += list(last.get("annotations") or [])
    claims = annotation_claims(notes)
    name = " › ".join((*titles, str(spec.get("title", ""))))
    project = test.get("projectName")
    if project:
        name = f"{name} [{project}]"
    durations = [r.get("duration") for r in results if isinstance(r.get("duration"), int | float)]
    duration = int(sum(durations)) if durations else None  # type: ignore[arg-type]
    common: dict[str, Any] = {"name": name, "file": file, "duration_ms": duration}

    if not results or last_status in ("skipped", "interrupted") or status == "skipped":
        return TestCase(outcome="skipped", **common), False
    if expected == "passed" and status == "expected" and last_status == "passed":
        return TestCase(outcome="passed", claims=claims, **common), False
    if expected == "passed" and status == "flaky" and last_status == "passed":
        return TestCase(outcome="passed", claims=claims, flaky=True, **common), False
    if expected == "failed" and status == "expected":
        # test.fail(): failing is its expected behaviour, so it cites nothing.
        return TestCase(outcome="passed", **common), True
    message = next((m for r in reversed(results) if (m := _error_message(r))), f"status {status}")
    return TestCase(outcome="failed", claims=claims, message=message, **common), False


def _error_message(result: Mapping[str, Any]) -> str | None:
    err = result.get("error")
    if not isinstance(err, dict):
        errs = result.get("errors")
        err = errs[0] if isinstance(errs, list) and errs and isinstance(errs[0], dict) else None
    if err is None:
        return None
    text = err.get("message") or err.get("value")
    return _clip(strip_ansi(str(text))) if text else None


def _clip(text: str) -> str:
    return text if len(text) <= _MESSAGE_LIMIT else text[: _MESSAGE_LIMIT - 1] + "…"


def _get(obj: Any, key: str) -> Any:
    return obj.get(key) if isinstance(obj, dict) else None

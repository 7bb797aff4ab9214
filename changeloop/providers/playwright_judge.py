"""A Playwright run judged from its process result and JSON report (pure).

Example::

    verdict = run_verdict(result, parsed, ".changeloop/reports/browser.json", 60_000)
    verdict.status        # None: the run went green; else "fail" / "inconclusive"
    settle(provider, job.claims, base, verdict, parsed)   # the capability's Outcome

A test credits a claim through a ``{type: "claim", description: "<id>"}``
annotation only when it passed (a flaky pass only with ``allowFlaky``); a failing
citing test marks it ``failed``; browser automation never credits a claim that
needs ``os-input``. A green run that leaves a needed claim uncredited is
``inconclusive``, never ``pass`` (docs/adapters).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from changeloop.executors.job import JobResult
from changeloop.model import ClaimMark, ClaimScope, Provider, Status
from changeloop.outcome import Finding, Outcome, TestCounts
from changeloop.process.run import ProcessResult
from changeloop.runner_reports.model import ReportResult


@dataclass(frozen=True)
class RunVerdict:
    """The run's status before claims are considered; ``None`` status means it went green."""

    status: Status | None
    reason: str | None
    findings: tuple[Finding, ...]


def run_verdict(
    result: ProcessResult | JobResult, parsed: ReportResult | None, report: str, timeout_ms: int
) -> RunVerdict:
    """How the run ended, before claims: spawn error, timeout, no report, failures, or green."""
    tail = _tail_hint(result)
    if result.spawn_error is not None:
        found = (Finding(kind="spawn-error", message=result.spawn_error, severity="error"),)
        return RunVerdict(
            "fail", f"could not start {result.argv[0]!r}: {result.spawn_error}", found
        )
    if result.timed_out:
        secs = timeout_ms / 1000
        return RunVerdict(
            "fail",
            f"timed out after {secs:g} s (timeoutMs {timeout_ms})",
            (Finding(kind="timeout", message=f"killed after {secs:g} s"),),
        )
    if parsed is None:
        missing = (
            Finding(
                kind="report-missing", message=f"no Playwright JSON report at {report}", file=report
            ),
        )
        if result.exit_code == 0:
            why = (
                f"exited 0 but wrote no report at {report}: a wrapper command must write the "
                "configured `report` (e.g. PLAYWRIGHT_JSON_OUTPUT_NAME with --reporter=json)"
            )
            return RunVerdict("inconclusive", why, missing)
        return RunVerdict(
            "fail", f"exited {result.exit_code} and wrote no report at {report}{tail}", missing
        )
    findings = parsed.findings
    if parsed.error is not None:
        status: Status = "inconclusive" if result.exit_code == 0 else "fail"
        return RunVerdict(status, f"report {report} unreadable: {parsed.error}", findings)
    failed = [t.id for t in parsed.tests or () if t.outcome in ("failed", "error")]
    if failed:
        return RunVerdict(
            "fail", f"{len(failed)} test(s) failed: {', '.join(failed[:5])}", findings
        )
    if result.exit_code != 0 or parsed.suite_failed:
        first = findings[0].message if findings else f"exited {result.exit_code}"
        return RunVerdict("fail", f"exited {result.exit_code}: {first}{tail}", findings)
    return RunVerdict(None, None, findings)


def settle(
    provider: Provider,
    scope: ClaimScope,
    base: Outcome,
    verdict: RunVerdict,
    parsed: ReportResult | None,
) -> Outcome:
    """Mark the claims this capability needs and settle pass / inconclusive."""
    needed = dict.fromkeys((*scope.claims_requiring(base.capability), *provider.claims))
    marks: dict[str, ClaimMark] = {}
    notes: dict[str, str] = {}
    cited_pass: set[str] = set()
    cited_flaky: set[str] = set()
    cited_fail: set[str] = set()
    cited_any: set[str] = set()
    for case in (parsed.tests or ()) if parsed else ():
        cited_any.update(case.claims)
        if case.outcome in ("failed", "error"):
            cited_fail.update(case.claims)
        elif case.outcome == "passed":
            (cited_flaky if case.flaky else cited_pass).update(case.claims)
    if provider.allow_flaky:
        cited_pass |= cited_flaky
    green = verdict.status is None
    for claim_id in needed:
        if claim_id in cited_fail:
            marks[claim_id], notes[claim_id] = "failed", "a test citing it failed"
        elif claim_id in scope.os_input and provider.input_mode == "browser-automation":
            marks[claim_id] = "uncredited"
            notes[claim_id] = "needs os-input; browser automation cannot show it"
        elif claim_id in cited_pass or (claim_id in provider.claims and green):
            marks[claim_id] = "credited"
        elif claim_id in cited_flaky:
            marks[claim_id] = "uncredited"
            notes[claim_id] = "only flaky tests cite it (set allowFlaky: true to accept them)"
        elif claim_id in cited_any:
            marks[claim_id], notes[claim_id] = "uncredited", "the tests citing it did not pass"
        else:
            marks[claim_id] = "uncredited"
            notes[claim_id] = 'no test carries {type: "claim", description: "' + claim_id + '"}'
    details = {**base.details, **({"claimNotes": notes} if notes else {})}
    out = replace(base, claims=marks, findings=verdict.findings, details=details)
    if not green:
        assert verdict.status is not None
        return replace(out, status=verdict.status, reason=verdict.reason)
    uncredited = [c for c, m in marks.items() if m != "credited"]
    if uncredited:
        why = "; ".join(f"{c}: {notes.get(c, 'uncredited')}" for c in uncredited)
        return replace(
            out, status="inconclusive", reason=f"passing run left claims uncredited — {why}"
        )
    ran = _ran(base.tests)
    if ran == 0 and not marks:
        return replace(out, status="inconclusive", reason="no test ran (all skipped or filtered)")
    return out


def _ran(counts: TestCounts | None) -> int | None:
    return None if counts is None else counts.passed + counts.failed


def _tail_hint(result: ProcessResult | JobResult) -> str:
    tail = result.log_tail.strip()
    if not tail:
        return ""
    return "\n" + "\n".join(tail.splitlines()[-15:])

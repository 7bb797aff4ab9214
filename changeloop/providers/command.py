"""The ``command`` adapter: one deterministic command, exit 0 ⇒ pass.

With ``envelope: true`` the command's stdout is the custom-runner JSON
envelope ``{exit_code, passed, findings, citations?}`` (schema
``runner-envelope.json``). Both the process and the envelope must agree on
success: envelope failure overrides process success, process failure overrides
envelope success, and a non-zero exit without a valid envelope is a fail with
the raw tails. A process that fails carries a ``test-failing`` finding with its
exit code.

``citations`` let a runner changeloop has no adapter for cite claims the way
tests do elsewhere: ``{test, claim, depth?, ref?, result, grounding?,
observer?}`` per test–claim pair. They credit claims by the same rule as any
citation (a passing one credits; a failing one fails the claim; depths are
checked); a ``grounding`` counts only when the envelope names the ``observer``
that traced it, else the citation is ``not-checked``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from changeloop.errors import Problem
from changeloop.executors.job import Job, JobResult
from changeloop.fingerprints.environment import resolve_argv
from changeloop.model import Plan, Provider
from changeloop.outcome import Finding, Observer, Outcome
from changeloop.process.run import ProcessResult
from changeloop.providers.base import (
    RunContext,
    missing_command,
    own_repository,
    read_own_workspace,
)
from changeloop.quality.lanes import routed_repositories, runs_quality
from changeloop.schemas import validate_named

if TYPE_CHECKING:
    from changeloop.runner_reports.model import ReportResult

NAME = "command"
DEFAULT_CAPABILITY = "command"  # plan.py uses the provider's name instead
RUNS_COMMAND = True
Envelope = tuple[dict[str, Any] | None, str | None]  # (the envelope, or why there is none)


default_resources = read_own_workspace


def repositories(provider: Provider, plan: Plan) -> tuple[str, ...]:
    """Its own repository; for the consumer-quality provider (``changeloop quality run``)
    every repository a lane runs in too: its result depends on each one's content."""
    own = own_repository(provider, plan)
    if not runs_quality(provider):
        return own
    routed = routed_repositories(plan.root, plan.repositories)
    return tuple(dict.fromkeys((*own, *routed)))


def capabilities(provider: Provider) -> tuple[str, ...]:
    return (provider.capability,)


def effective_command(provider: Provider) -> tuple[str, ...] | None:
    return provider.command


def fingerprint_inputs(provider: Provider) -> Mapping[str, Any]:
    return {"envelope": provider.envelope}


def preflight(provider: Provider, plan: Plan) -> Sequence[Problem]:
    return missing_command(provider, '["your", "argv"]')


run = None  # the engine runs prepare()'s job and hands the result to read()


def prepare(ctx: RunContext) -> Job:
    """The provider's command as a job, in its repository's sandbox."""
    provider = ctx.provider
    assert provider.command is not None and provider.repository is not None
    workdir = ctx.workdirs[provider.repository]
    # derived `python` is the repository's venv when it runs (fingerprints/environment.py)
    argv = resolve_argv(provider.command, ctx.sources.get(provider.repository, workdir), ctx.env)
    job = ctx.job(argv, repo=provider.repository, env=ctx.env, log_name=provider.name)
    if not provider.envelope:
        return job
    from changeloop.grounding.citations import crediting_context  # noqa: PLC0415 - only an envelope's citations need grounding (and the report readers it imports)

    # the envelope is its stdout: the one job kind here that keeps a stdout copy
    return replace(job, context=crediting_context(ctx.plan, provider), output=True)


def read(job: Job, result: JobResult) -> list[Outcome]:
    """The outcome of a finished job (reads only the envelope on its stdout)."""
    envelope: Envelope = (None, None)
    if job.provider.envelope and result.spawn_error is None and not result.timed_out:
        envelope = read_envelope(result)
    outcome = judge(job.provider, result, envelope)
    report = envelope_report(envelope[0].get("citations") if envelope[0] else None)
    return [outcome if report is None else cite(job, outcome, report)]


def cite(job: Job, outcome: Outcome, report: ReportResult) -> Outcome:
    """The envelope's citations judged like any test's: depths, results, crediting."""
    from changeloop.grounding.citations import check_depths, claim_marks, receipt_citations  # noqa: PLC0415 - only an envelope's citations need grounding

    checked, depths = check_depths(report, entry_points=bool(job.context.get("entryPoints")))
    report = checked or report
    status, reason = outcome.status, outcome.reason
    failed = [t.id for t in report.tests or () if t.outcome in ("failed", "error")]
    findings = [*depths, *outcome.findings]
    if status == "pass" and (depths or failed):
        status = "fail"
        reason = "; ".join(f.message for f in depths) or (
            f"the envelope says passed but {len(failed)} citing test(s) failed: "
            + ", ".join(failed[:5])
        )
    marks, why = claim_marks(job, report, status, job.provider.capability)
    return replace(
        outcome,
        status=status,
        reason=reason,
        claims=marks,
        findings=(*why, *findings),
        citations=receipt_citations(report),
        passed_tests=tuple(
            dict.fromkeys(t.id for t in report.tests or () if t.outcome == "passed")
        ),
        failed_tests=tuple(dict.fromkeys(failed)),
    )


def envelope_report(raw: Any) -> ReportResult | None:
    """The envelope's citations as a report: one test per name, its citations in order."""
    if not isinstance(raw, list) or not raw:
        return None
    from changeloop.runner_reports.model import Citation, ReportResult, TestCase  # noqa: PLC0415 - only an envelope's citations need the report model (and its readers)

    rank = {"skipped": 0, "passed": 1, "failed": 2, "error": 3}
    tests: dict[str, TestCase] = {}
    for item in raw:
        observer = item.get("observer")
        grounding = item.get("grounding") if observer else None
        citation = Citation(
            item["claim"],
            depth=item.get("depth"),
            ref=item.get("ref"),
            grounding=grounding,
            reason=None if grounding else "the envelope names no observer that traced it",
            observer=observer,
        )
        name = item["test"]
        old = tests.get(name)
        outcome = item["result"]
        if old is not None and rank[old.outcome] > rank[outcome]:
            outcome = old.outcome
        claims = (*old.claims, citation.claim) if old else (citation.claim,)
        cites = (*old.citations, citation) if old else (citation,)
        tests[name] = TestCase(name, outcome, claims=tuple(dict.fromkeys(claims)), citations=cites)
    return ReportResult(format="envelope", tests=tuple(tests.values()), counts=None)


def judge(
    provider: Provider, result: ProcessResult | JobResult, envelope: Envelope | None = None
) -> Outcome:
    """Turn one finished process (and the envelope read from it) into the provider's outcome."""
    base = Outcome(
        capability=provider.capability,
        status="pass",
        exit_code=result.exit_code,
        command=result.argv,
        observer=Observer(adapter=NAME, tool=result.argv[0] if result.argv else None),
    )
    if result.spawn_error is not None:
        return replace(
            base,
            status="fail",
            reason=f"could not start {result.argv[0]!r}: {result.spawn_error}",
            findings=(Finding(kind="spawn-error", message=result.spawn_error, severity="error"),),
        )
    if result.timed_out:
        seconds = provider.timeout_ms / 1000
        return replace(
            base,
            status="fail",
            reason=f"timed out after {seconds:g} s (timeoutMs {provider.timeout_ms})",
            findings=(Finding(kind="timeout", message=f"killed after {seconds:g} s"),),
        )
    if provider.envelope:
        return _judge_envelope(base, result, envelope or read_envelope(result))
    if result.exit_code == 0:
        return base
    return replace(
        base,
        status="fail",
        reason=f"exited {result.exit_code}{_tail_hint(result)}",
        findings=(failing(result.exit_code),),
    )


def failing(code: int | None) -> Finding:
    """The runner's process failed: ``test-failing`` with its exit code."""
    return Finding(
        kind="test-failing",
        severity="error",
        message=f"the runner's process exited {code} (exit code {code})",
    )


def _judge_envelope(base: Outcome, result: ProcessResult | JobResult, read: Envelope) -> Outcome:
    """The five outcomes of the custom-runner envelope (command, envelope: true)."""
    envelope, problem = read
    code = result.exit_code
    if envelope is None:
        invalid = (Finding(kind="envelope-invalid", message=problem or "", severity="error"),)
        if code == 0:
            why = f"exited 0 but stdout is not a runner envelope: {problem}"
            return replace(base, status="inconclusive", reason=why, findings=invalid)
        why = f"exited {code} without a valid runner envelope ({problem}){_tail_hint(result)}"
        return replace(base, status="fail", reason=why, findings=(failing(code), *invalid))
    findings = tuple(
        Finding(
            kind=str(f.get("kind", "finding")),
            message=str(f.get("message", "")),
            severity=f.get("severity"),
            file=f.get("file"),
            line=f.get("line"),
        )
        for f in envelope["findings"]
    )
    if code != 0:
        why = f"process exited {code}; the envelope cannot override a failed process"
        return replace(base, status="fail", reason=why, findings=(failing(code), *findings))
    if not envelope["passed"]:
        why = "the envelope says passed: false"
        return replace(base, status="fail", reason=why, findings=findings)
    if findings:
        why = f"the envelope reports {len(findings)} finding(s)"
        return replace(base, status="fail", reason=why, findings=findings)
    if envelope["exit_code"] != 0:
        why = f"the envelope says exit_code {envelope['exit_code']}: the runner it wraps failed"
        return replace(base, status="fail", reason=why, findings=findings)
    return base


def read_envelope(result: ProcessResult | JobResult) -> Envelope:
    """Parse and schema-check stdout as a runner envelope; (envelope, None) or (None, why)."""
    try:
        if isinstance(result, JobResult) and result.stdout is not None:
            text = result.stdout.decode("utf-8").strip()
        elif result.stdout_path is not None:
            text = result.stdout_path.read_text(encoding="utf-8").strip()
        else:
            text = ""
    except (OSError, UnicodeDecodeError) as exc:
        return None, f"stdout unreadable: {exc}"
    if not text:
        return None, "stdout is empty"
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        return None, f"stdout is not JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})"
    error = validate_named("runner-envelope.json", data)
    if error is not None:
        return None, error
    return data, None


def _tail_hint(result: ProcessResult | JobResult) -> str:
    tail = (result.stderr_tail or result.stdout_tail).strip().splitlines()
    return f": {tail[-1][:200]}" if tail else ""


def missing_reason(ctx: RunContext) -> str | None:
    """Never asked: this adapter issues a receipt for every capability it runs."""
    return None

"""The ``playwright`` adapter: one Playwright run, a ``browser`` receipt, one more per ``outputs``.

A direct ``playwright test`` command (``npx playwright test``, ``npx
@playwright/test test``, a path to the ``playwright`` binary) gets
``--reporter=json`` and ``--project <project>`` unless it already has them, and
the JSON goes to the ``report`` path through ``PLAYWRIGHT_JSON_OUTPUT_NAME``.
A wrapper (``npm run e2e``) runs as written and must write ``report`` itself.

Playwright's own output never lands in the user's tree: a
direct command also gets ``--output <run dir>/playwright-output`` at run time
(unless it names ``--output``), and every command gets
``PLAYWRIGHT_LAST_RUN_OUTPUT_FILE`` and ``PLAYWRIGHT_HTML_OUTPUT_DIR`` there
(unless the environment names them), so ``test-results/.last-run.json`` cannot
make the next receipts ``dirty`` or re-run an unchanged provider. The
fingerprint keeps the command without that per-run path.

Claims come from ``{type: "claim", description: "<id>"}`` annotations (a
``claim-depth`` / ``claim-ref`` annotation right after one qualifies it), read
by :mod:`changeloop.runner_reports.playwright_json`; the receipt lists the
citations per claim. An unknown depth fails the receipt, naming the test, and
so does a citation without one where the repository declares entry points. A
passing run that leaves a claim the capability needs uncredited is
``inconclusive``: green is not evidence for a claim no test names.

This module is the adapter's interface and ``prepare``/``read``;
:mod:`~changeloop.providers.playwright_argv` makes the command and
:mod:`~changeloop.providers.playwright_judge` judges the run and marks the claims.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from changeloop.errors import Problem
from changeloop.executors.job import Job, JobResult
from changeloop.grounding.citations import check_depths, receipt_citations
from changeloop.model import ADAPTER_CAPABILITIES, Plan, Provider
from changeloop.outcome import Observer, Outcome
from changeloop.process.run import ProcessResult
from changeloop.providers import playwright_argv
from changeloop.providers.base import RunContext, escapes, inside, missing_command, own_repository
from changeloop.providers.playwright_argv import OUTPUT_DIR, output_env, run_argv
from changeloop.providers.playwright_judge import RunVerdict, run_verdict, settle
from changeloop.runner_reports import playwright_json
from changeloop.runner_reports.model import ReportResult, unreadable
from changeloop.verdict import entry_points_declared

NAME = "playwright"
DEFAULT_CAPABILITY = ADAPTER_CAPABILITIES[NAME]
RUNS_COMMAND = True


def default_resources(provider: Provider, plan: Plan) -> tuple[str, ...]:
    repo = provider.repository
    return (f"workspace-read:{repo}", f"dev-server:{repo}", f"browser:{repo}")


repositories = own_repository

# the argv that runs, and the fingerprint's command: reporter and project added
effective_command = playwright_argv.effective_command


def capabilities(provider: Provider) -> tuple[str, ...]:
    extra = [c for c in provider.outputs if c != provider.capability]
    return (provider.capability, *dict.fromkeys(extra))


def report_path(provider: Provider) -> str:
    """The report, relative to the repository: ``report`` or ``.changeloop/reports/<name>.json``."""
    return provider.report or f".changeloop/reports/{provider.name}.json"


def fingerprint_inputs(provider: Provider) -> Mapping[str, Any]:
    return {
        "project": provider.project,
        "outputs": list(provider.outputs),
        "inputMode": provider.input_mode,
        "allowFlaky": provider.allow_flaky,
        "report": report_path(provider),
    }


def preflight(provider: Provider, plan: Plan) -> Sequence[Problem]:
    problems = missing_command(provider, "[npx, playwright, test]")
    report = report_path(provider)
    if escapes(report):
        problems.append(
            Problem(
                code="path_escape",
                message=f"provider '{provider.name}': report {report!r} escapes its repository",
                location=provider.location,
                fix="give `report` as a path inside the repository, e.g. test-results/e2e.json",
                providers=(provider.name,),
            )
        )
    return problems


run = None  # the engine runs prepare()'s job and hands the result to read()


def prepare(ctx: RunContext) -> Job | list[Outcome]:
    """The Playwright run as a job writing its JSON report, or the outcomes of refusing it."""
    provider = ctx.provider
    assert provider.command is not None and provider.repository is not None
    workdir = ctx.workdirs[provider.repository]
    # a symlink may lead the report out of the repository: refuse before touching it
    report = inside(workdir, report_path(provider))
    if report is None:
        reason = (
            f"report {report_path(provider)!r} resolves outside the repository"
            " (symlink); nothing was run"
        )
        return [
            Outcome(
                capability=cap,
                status="fail",
                reason=reason,
                command=effective_command(provider),
                observer=Observer(adapter=NAME),
                input_mode=provider.input_mode,
            )
            for cap in capabilities(provider)
        ]
    env = {
        **ctx.env,
        **output_env(ctx.env, ctx.run_dir.resolve()),
        "PLAYWRIGHT_JSON_OUTPUT_NAME": str(report),
        "PLAYWRIGHT_HTML_OPEN": ctx.env.get("PLAYWRIGHT_HTML_OPEN", "never"),
    }
    argv = run_argv(provider, ctx.run_dir.resolve() / OUTPUT_DIR)
    assert argv is not None
    job = ctx.job(argv, repo=provider.repository, env=env, log_name=provider.name)
    entry_points = entry_points_declared(ctx.plan, provider.repository)
    return replace(job, report=report_path(provider), context={"entryPoints": entry_points})


def read(job: Job, result: JobResult) -> list[Outcome]:
    """Pure: one Outcome per capability from the run and the report bytes it wrote."""
    parsed = None
    if result.report is not None:
        parsed = playwright_json.read(result.report)
    elif result.report_error is not None:
        parsed = unreadable("playwright", f"cannot read report: {result.report_error}")
    return judge(job, result, parsed, report_path(job.provider))


def judge(
    job: Job, result: ProcessResult | JobResult, parsed: ReportResult | None, report: str
) -> list[Outcome]:
    """One Outcome per capability (``browser`` first, then each of ``outputs``)."""
    provider = job.provider
    parsed, depths = check_depths(parsed, entry_points=bool(job.context.get("entryPoints")))
    verdict = run_verdict(result, parsed, report, provider.timeout_ms)
    if depths:
        why = "; ".join(f.message for f in depths)
        verdict = RunVerdict(
            verdict.status or "fail", verdict.reason or why, (*depths, *verdict.findings)
        )
    tests = parsed.tests or () if parsed else ()
    flaky = tuple(t.id for t in tests if t.flaky)
    base = Outcome(
        capability=provider.capability,
        status="pass",
        exit_code=result.exit_code,
        # The fingerprint's command: the per-run ``--output`` path is left out, as the
        # PLAYWRIGHT_* paths in the environment are.
        command=effective_command(provider) or result.argv,
        observer=Observer(
            adapter=NAME, tool="playwright", version=parsed.version if parsed else None
        ),
        input_mode=provider.input_mode,
        citations=receipt_citations(parsed),
        tests=parsed.counts if parsed else None,
        passed_tests=tuple(t.id for t in tests if t.outcome == "passed"),
        failed_tests=tuple(t.id for t in tests if t.outcome in ("failed", "error")),
        details={
            "report": report,
            "project": provider.project,
            "inputMode": provider.input_mode,
            "allowFlaky": provider.allow_flaky,
            "flaky": list(flaky),
            **(
                {"expectedFailures": parsed.extra["expectedFailures"]}
                if parsed and "expectedFailures" in parsed.extra
                else {}
            ),
        },
    )
    return [
        settle(provider, job.claims, replace(base, capability=cap), verdict, parsed)
        for cap in capabilities(provider)
    ]


def missing_reason(ctx: RunContext) -> str | None:
    """Never asked: this adapter issues a receipt for every capability it runs."""
    return None

"""The ``playwright`` adapter: one Playwright run, a ``browser`` receipt, one more per ``outputs``.

A direct ``playwright test`` command (``npx playwright test``, ``npx
@playwright/test test``, a path to the ``playwright`` binary) gets
``--reporter=json`` and ``--project <project>`` unless it already has them, and
the JSON goes to the ``report`` path through ``PLAYWRIGHT_JSON_OUTPUT_NAME``.
A wrapper (``npm run e2e``) runs as written and must write ``report`` itself.

Playwright's own output never lands in the user's tree (issue 13, item 9): a
direct command also gets ``--output <run dir>/playwright-output`` at run time
(unless it names ``--output``), and every command gets
``PLAYWRIGHT_LAST_RUN_OUTPUT_FILE`` and ``PLAYWRIGHT_HTML_OUTPUT_DIR`` there
(unless the environment names them), so ``test-results/.last-run.json`` cannot
make the next receipts ``dirty`` or re-run an unchanged provider. The
fingerprint keeps the command without that per-run path.

Claims come from ``{type: "claim", description: "<id>"}`` annotations, read by
:mod:`changeloop.providers.reports.playwright_json`. A passing run that leaves a
claim the capability needs uncredited is ``inconclusive``: green is not evidence
for a claim no test names (DESIGN.md §3, §7).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath
from typing import Any

from changeloop.errors import Problem
from changeloop.model import ClaimMark, Plan, Provider, Status
from changeloop.processes import ProcessResult
from changeloop.providers.base import (
    Finding,
    Observer,
    Outcome,
    RunContext,
    TestCounts,
    escapes,
    inside,
    missing_command,
    own_repository,
)
from changeloop.providers.reports import playwright_json
from changeloop.providers.reports.model import ReportResult, unreadable
from changeloop.run.job import Job, JobResult

NAME = "playwright"
DEFAULT_CAPABILITY = "browser"
RUNS_COMMAND = True

OUTPUT_DIR = "playwright-output"  # Playwright's outputDir, under the provider's run directory
HTML_DIR = "playwright-report"
_NPX_FLAGS_WITH_VALUE = frozenset({"-p", "--package", "-c", "--call"})
_PACKAGES = ("playwright", "@playwright/test")


def default_resources(provider: Provider, plan: Plan) -> tuple[str, ...]:
    repo = provider.repository
    return (f"workspace-read:{repo}", f"dev-server:{repo}", f"browser:{repo}")


repositories = own_repository


def capabilities(provider: Provider) -> tuple[str, ...]:
    extra = [c for c in provider.outputs if c != provider.capability]
    return (provider.capability, *dict.fromkeys(extra))


def report_path(provider: Provider) -> str:
    """The report, relative to the repository: ``report`` or ``.changeloop/reports/<name>.json``."""
    return provider.report or f".changeloop/reports/{provider.name}.json"


def test_index(argv: Sequence[str]) -> int | None:
    """Index of ``test`` when ``argv`` runs ``playwright test`` directly, else None (a wrapper)."""
    if not argv:
        return None
    head = PurePosixPath(argv[0]).name
    if head == "playwright":
        return 1 if len(argv) > 1 and argv[1] == "test" else None
    if head != "npx":
        return None
    i = 1
    while i < len(argv) and argv[i].startswith("-"):
        i += 2 if argv[i] in _NPX_FLAGS_WITH_VALUE else 1
    if i + 1 < len(argv) and _is_playwright_package(argv[i]) and argv[i + 1] == "test":
        return i + 1
    return None


def _is_playwright_package(token: str) -> bool:
    """``playwright``, ``@playwright/test``, optionally pinned (``playwright@1.65.1``)."""
    scope = "@" if token.startswith("@") else ""
    return scope + token.removeprefix("@").split("@", 1)[0] in _PACKAGES


def effective_command(provider: Provider) -> tuple[str, ...] | None:
    """The argv that runs: reporter and project added to a direct command, never duplicated."""
    if provider.command is None:
        return None
    argv = list(provider.command)
    if test_index(argv) is None:
        return tuple(argv)
    end = argv.index("--") if "--" in argv else len(argv)
    opts, rest = argv[:end], argv[end:]
    reporter_at = _option_at(opts, "--reporter")
    if reporter_at is None:
        opts.append("--reporter=json")
    else:
        _ensure_json_reporter(opts, reporter_at)
    if provider.project and _option_at(opts, "--project") is None:
        opts += ["--project", provider.project]
    return (*opts, *rest)


def run_argv(provider: Provider, output_dir: Path) -> tuple[str, ...] | None:
    """:func:`effective_command` plus ``--output <output_dir>`` for a direct command.

    Kept out of :func:`effective_command` (the fingerprint's command) because the
    path is this run's own; a command that names ``--output`` keeps its choice.
    """
    argv = effective_command(provider)
    if argv is None or test_index(argv) is None:
        return argv
    end = argv.index("--") if "--" in argv else len(argv)
    if _option_at(argv[:end], "--output") is not None:
        return argv
    return (*argv[:end], "--output", str(output_dir), *argv[end:])


def output_env(env: Mapping[str, str], run_dir: Path) -> dict[str, str]:
    """Where Playwright writes what is not the JSON report: the run directory, not the tree."""
    out = {
        "PLAYWRIGHT_LAST_RUN_OUTPUT_FILE": str(run_dir / OUTPUT_DIR / ".last-run.json"),
        "PLAYWRIGHT_HTML_OUTPUT_DIR": str(run_dir / HTML_DIR),
    }
    return {name: env.get(name) or value for name, value in out.items()}


def _option_at(argv: Sequence[str], flag: str) -> int | None:
    for i, arg in enumerate(argv):
        if arg == flag or arg.startswith(flag + "="):
            return i
    return None


def _ensure_json_reporter(argv: list[str], at: int) -> None:
    """Keep the user's reporters and add ``json`` to them (``--reporter=list,json``)."""
    arg = argv[at]
    if "=" in arg:
        value = arg.split("=", 1)[1]
        if "json" not in value.split(","):
            argv[at] = f"--reporter={value},json"
    elif at + 1 < len(argv) and "json" not in argv[at + 1].split(","):
        argv[at + 1] = f"{argv[at + 1]},json"


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


async def run(ctx: RunContext) -> list[Outcome]:
    prepared = prepare(ctx)
    if isinstance(prepared, list):
        return prepared
    return read(prepared, await ctx.executor.run(prepared))


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
    return replace(job, report=report_path(provider))


def read(job: Job, result: JobResult) -> list[Outcome]:
    """Pure: one Outcome per capability from the run and the report bytes it wrote."""
    parsed = None
    if result.report is not None:
        parsed = playwright_json.read(result.report)
    elif result.report_error is not None:
        parsed = unreadable("playwright", f"cannot read report: {result.report_error}")
    return judge(job, result, parsed, report_path(job.provider))


@dataclass(frozen=True)
class _RunVerdict:
    """The run's status before claims are considered; ``None`` status means it went green."""

    status: Status | None
    reason: str | None
    findings: tuple[Finding, ...]


def judge(
    job: Job, result: ProcessResult | JobResult, parsed: ReportResult | None, report: str
) -> list[Outcome]:
    """One Outcome per capability (``browser`` first, then each of ``outputs``)."""
    provider = job.provider
    verdict = _run_verdict(result, parsed, report, provider.timeout_ms)
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
        _outcome_for(job, replace(base, capability=cap), verdict, parsed)
        for cap in capabilities(provider)
    ]


def _run_verdict(
    result: ProcessResult | JobResult, parsed: ReportResult | None, report: str, timeout_ms: int
) -> _RunVerdict:
    tail = _tail_hint(result)
    if result.spawn_error is not None:
        found = (Finding(kind="spawn-error", message=result.spawn_error, severity="error"),)
        return _RunVerdict(
            "fail", f"could not start {result.argv[0]!r}: {result.spawn_error}", found
        )
    if result.timed_out:
        secs = timeout_ms / 1000
        return _RunVerdict(
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
            return _RunVerdict("inconclusive", why, missing)
        return _RunVerdict(
            "fail", f"exited {result.exit_code} and wrote no report at {report}{tail}", missing
        )
    findings = parsed.findings
    if parsed.error is not None:
        status: Status = "inconclusive" if result.exit_code == 0 else "fail"
        return _RunVerdict(status, f"report {report} unreadable: {parsed.error}", findings)
    failed = [t.id for t in parsed.tests or () if t.outcome in ("failed", "error")]
    if failed:
        return _RunVerdict(
            "fail", f"{len(failed)} test(s) failed: {', '.join(failed[:5])}", findings
        )
    if result.exit_code != 0 or parsed.suite_failed:
        first = findings[0].message if findings else f"exited {result.exit_code}"
        return _RunVerdict("fail", f"exited {result.exit_code}: {first}{tail}", findings)
    return _RunVerdict(None, None, findings)


def _outcome_for(
    job: Job, base: Outcome, verdict: _RunVerdict, parsed: ReportResult | None
) -> Outcome:
    """Mark the claims this capability needs and settle pass / inconclusive."""
    provider = job.provider
    needed = dict.fromkeys((*job.claims.claims_requiring(base.capability), *provider.claims))
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
        elif claim_id in job.claims.os_input and provider.input_mode == "browser-automation":
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


def missing_reason(ctx: RunContext) -> str | None:
    """Never asked: this adapter issues a receipt for every capability it runs."""
    return None

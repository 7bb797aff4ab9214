"""The ``test-discovery`` adapter: one test run, two receipts (``test``, ``discovery``).

Example execution.yaml::

    test:
      adapter: test-discovery
      command: [python, -m, pytest, --junitxml=.changeloop/reports/test.xml]
      report: .changeloop/reports/test.xml     # relative to the repository
      minimum: 1

Rules (docs/adapters):

- ``test`` passes iff the exit code is 0 *and* the report shows no failed test
  and no suite-level failure. A report never outvotes the exit code; exit 0
  with failures in the report fails; a missing or unreadable report is
  ``tests: null`` — ``fail`` on a non-zero exit, ``inconclusive`` on exit 0.
- ``discovery`` passes iff tests that actually ran (passed + failed) reach
  ``minimum`` (default 1); zero tests ran always fails it. It is issued under
  ``discoveryProvider`` when set, else under this provider's name.
- Claims: a test that passed citing a claim credits it in a passing receipt; a
  failing test citing it marks it ``failed``; the provider's ``claims:`` are
  credited by a passing receipt. Claims that need ``test`` and no test cited
  stay ``uncredited`` (the verdict makes them inconclusive).
- With no ``report``, libtest text is read from stdout (``cargo test``), and
  unittest's ``-v`` output from the log (it writes to stderr) when ``format:
  unittest`` names it or the output looks like it.
- A command that runs pytest itself gets changeloop's claim plugin through
  ``-p changeloop_claims`` and ``PYTHONPATH`` (``pytest_injection.py``); the
  plugin records where the repository's own packages were imported from, and
  one imported from outside it (an installed copy) turns a passing ``test``
  into ``inconclusive`` with finding ``imported-from-outside``.
- Grounding (``changeloop/grounding/``): the plugin traces each citing test
  against the repository's ``entryPoints`` and records its ``grounding`` in a
  file of its own; where it ran, that record is the only source of a test's
  claims and grounding (report properties a test could write are not read).
  A passing citation credits a behavioral claim only when ``grounded`` (or
  ``not-checked`` where no entry points are declared), a structural one only
  when ``inert``; otherwise the claim stays uncredited with finding
  ``ungrounded`` or ``grounding-unavailable``. Depths are checked: an unknown
  one is refused by name, and under declared entry points a citation without
  one fails the receipt. The receipt lists the citations per claim.
- The report is deleted before the run (a stale report must not speak for this
  run) and copied into the provider's run directory afterwards (the executor
  does both: ``Job.report``/``keep_report``).
- ``prepare`` builds the job, ``read`` judges it without I/O: the executor
  returns the report, the whole output and the plugin's records (``collect``)
  in the ``JobResult``; the engine remembers the trace records for mutation
  and ``--dry-run`` (the engine remembers them).
- Tails: stdout/stderr tails as the process runner bounds them (last 40 lines,
  at most 4 KiB each) go into ``details``; at most 50 findings, each message at
  most 2000 characters; at most 200 test names per list.

This module is the adapter's interface, ``prepare`` and ``read``;
:mod:`~changeloop.providers.test_discovery_report` reads what the run left (the
report, the plugin's import records) and :mod:`~changeloop.providers.test_discovery_judge`
gives the two verdicts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from changeloop.errors import Problem
from changeloop.executors.job import Job, JobResult
from changeloop.fingerprints.environment import expand_globs, resolve_argv
from changeloop.grounding import citations as grounding
from changeloop.model import ADAPTER_CAPABILITIES, Plan, Provider
from changeloop.outcome import Finding, Observer, Outcome
from changeloop.project.packages import project_packages
from changeloop.providers.base import (
    RunContext,
    escapes,
    inside,
    missing_command,
    own_repository,
    read_own_workspace,
)
from changeloop.providers.pytest_injection import PLUGIN, inject
from changeloop.providers.test_discovery_judge import (
    NOTHING_FAILED,
    judge_discovery,
    judge_test,
    version_from_output,
)
from changeloop.providers.test_discovery_report import (
    as_text,
    foreign_imports,
    names,
    pytest_version,
    report_of,
)
from changeloop.providers.test_discovery_unreported import explain, test_files
from changeloop.runner_reports import FORMATS, canonical_format
from changeloop.runner_reports.classify import classify
from changeloop.runner_reports.model import ReportResult

NAME = "test-discovery"
DEFAULT_CAPABILITY = ADAPTER_CAPABILITIES[NAME]
RUNS_COMMAND = True
MAX_FINDINGS = 50


default_resources = read_own_workspace


repositories = own_repository


def capabilities(provider: Provider) -> tuple[str, ...]:
    return (provider.capability, "discovery")


def effective_command(provider: Provider) -> tuple[str, ...] | None:
    return provider.command


def fingerprint_inputs(provider: Provider) -> Mapping[str, Any]:
    return {
        "report": provider.report,
        "format": provider.format,
        "minimum": provider.minimum,
        "discoveryProvider": provider.discovery_provider,
        # the repository's entry points decide each citation's grounding (docs/grounding.md)
        **({"entryPoints": sorted(provider.entry_points)} if provider.entry_points else {}),
    }


def preflight(provider: Provider, plan: Plan) -> Sequence[Problem]:
    problems = missing_command(
        provider, "[python, -m, pytest, --junitxml=.changeloop/reports/test.xml]"
    )
    if provider.report is not None and escapes(provider.report):
        problems.append(
            Problem(
                code="path_escape",
                message=f"provider '{provider.name}': report {provider.report!r} escapes its "
                "repository",
                location=provider.location,
                fix="give `report` relative to the repository, e.g. .changeloop/reports/test.xml",
                providers=(provider.name,),
            )
        )
    if provider.format is not None and canonical_format(provider.format) is None:
        problems.append(
            Problem(
                code="unknown_report_format",
                message=f"provider '{provider.name}': unknown report format {provider.format!r}",
                location=provider.location,
                fix=f"use one of {', '.join(FORMATS)}, or leave `format` out to sniff it",
                providers=(provider.name,),
            )
        )
    return problems


run = None  # the engine runs prepare()'s job and hands the result to read()


def prepare(ctx: RunContext) -> Job | list[Outcome]:
    """The test run as a job (plugin injected, grounding configured), or why it cannot run.

    Everything ``read`` needs travels in the job: the report, the plugin's
    import and trace records (``collect``), the whole output, and the plan's
    part of the claim rule and of the import check (``context``).
    """
    provider = ctx.provider
    repo = provider.repository or next(iter(ctx.workdirs))
    workdir = ctx.workdirs[repo]
    # derived `python` is the repository's venv when it runs (fingerprints/environment.py)
    argv = resolve_argv(provider.command or (), ctx.sources.get(repo, workdir), ctx.env)
    # node --test dist-node/test/*.js, after the build, where the command runs
    argv = expand_globs(argv, workdir / (provider.workdir or ""))
    if provider.report is not None and inside(workdir, provider.report) is None:
        reason = f"report {provider.report!r} resolves outside the repository (symlink)"
        return [
            Outcome(
                capability=c,
                status="fail",
                reason=reason,
                command=argv,
                provider=_provider_for(provider, c),
            )
            for c in capabilities(provider)
        ]
    packages = project_packages(workdir)
    injected = inject(argv, ctx.env, ctx.run_dir, packages)
    env = injected.env  # PYTHONDONTWRITEBYTECODE=1 comes with every provider (decision 105)
    collect: tuple[str, ...] = ()
    inputs: tuple[tuple[str, bytes], ...] = ()
    if (
        injected.imports_dir is not None
    ):  # the plugin is in: it traces citing tests (docs/grounding.md)
        env = grounding.configure(ctx.run_dir, repo, workdir, provider.entry_points, env)
        collect = (injected.imports_dir.name, grounding.FOLDER)
        inputs = grounding.shipped(ctx.run_dir)  # travels with the job to a remote worker
    job = ctx.job(injected.argv, repo=repo, env=env, log_name=provider.name)
    source = ctx.sources.get(repo, workdir)
    # files named like tests where it runs: what did not report, should it fail quietly
    runs_js = any(w in ("vitest", "jest") for w in (a.rsplit("/", 1)[-1] for a in argv[:3]))
    candidates = test_files(workdir / (provider.workdir or "")) if runs_js else []
    context = {
        "command": list(argv),
        "testFiles": candidates,
        "injected": len(injected.argv) > len(argv),
        "imports": injected.imports_dir.name if injected.imports_dir is not None else None,
        "packages": dict(packages),
        "roots": [str(workdir), str(source)],
        "source": str(source),
        **grounding.crediting_context(ctx.plan, ctx.provider),
    }
    return replace(
        job,
        report=provider.report,
        keep_report=True,
        collect=collect,
        inputs=inputs,
        output=True,
        context=context,
    )


def read(job: Job, result: JobResult) -> list[Outcome]:
    """Pure: the ``test`` and ``discovery`` outcomes from the job and what its run returned."""
    provider = job.provider
    argv = tuple(job.context["command"])
    caps = capabilities(provider)
    if result.spawn_error is not None:
        reason = f"could not start {argv[0] if argv else 'the command'!r}: {result.spawn_error}"
        finding = Finding(kind="spawn-error", message=result.spawn_error, severity="error")
        return [
            Outcome(
                capability=c,
                status="fail",
                reason=reason,
                findings=(finding,),
                command=argv,
                provider=_provider_for(provider, c),
                observer=Observer(adapter=NAME),
            )
            for c in caps
        ]
    report = report_of(job, result)
    output = as_text(result.stdout) + "\n" + result.stderr_tail
    findings = [
        *(report.findings if report else ()),
        *classify(
            timed_out=result.timed_out,
            output=output,
            report=report,
            report_named=provider.report,
            timeout_ms=provider.timeout_ms,
        ),
    ]
    test_status, test_reason = judge_test(
        result.exit_code, result.timed_out, report, provider.report
    )
    if test_reason is not None and test_reason.endswith(NOTHING_FAILED):
        # the whole log: what the runner said first is rarely in the tails
        said = explain(report, job.context.get("testFiles") or (), as_text(result.log) or output)
        if said is not None:
            test_reason = f"{test_reason}; {said}"
    foreign = foreign_imports(job, result)
    if foreign:
        findings[:0] = foreign.values()  # first, so the bound on findings never drops them
        if test_status == "pass":
            packages = ", ".join(foreign)
            test_status, test_reason = (
                "inconclusive",
                f"the tests imported {packages} from outside the repository (an installed "
                "copy), so they did not prove this content",
            )
    if job.context.get("imports") is not None:  # the plugin ran: its record alone says who cites
        report, missing = _from_record(report, result)
        findings[:0] = missing
    report, depth_findings = grounding.check_depths(
        report, entry_points=bool(job.context.get("entryPoints", provider.entry_points))
    )
    if depth_findings:
        findings[:0] = depth_findings
        if test_status == "pass":
            test_status = "fail"
            test_reason = "; ".join(f.message for f in depth_findings)
    test_marks, ungrounded = grounding.claim_marks(job, report, test_status)
    findings[:0] = [*ungrounded, *grounding.not_checked_findings(report)]
    disc_status, disc_reason = judge_discovery(
        result.exit_code, result.timed_out, report, provider.minimum
    )
    if disc_status == "pass" and _cargo_stopped_early(argv, result.exit_code, report):
        # without --no-fail-fast cargo stops at the first failing test binary: the
        # binaries after it never ran, so the count is not the suite's
        disc_status, disc_reason = (
            "inconclusive",
            "cargo stopped at the first failing test binary, so the tests of the binaries "
            "after it were never counted (run `cargo test --no-fail-fast`)",
        )
    common: dict[str, Any] = {
        "tests": report.counts if report else None,
        "passed_tests": names(report, ("passed",)),
        "failed_tests": names(report, ("failed", "error")),
        "findings": tuple(findings[:MAX_FINDINGS]),
        "exit_code": result.exit_code,
        "observer": Observer(
            adapter=NAME,
            tool=report.tool if report else None,
            version=(report.version if report else None)
            or pytest_version(job, result)
            or version_from_output(report.tool if report else None, output),
        ),
        "command": argv,
        "details": {
            "format": report.format if report else None,
            "report": provider.report,
            "reportError": report.error if report else None,
            "injected": ["-p", PLUGIN] if job.context["injected"] else [],
            **({"summary": dict(report.extra)} if report and report.format == "unittest" else {}),
            "stdoutTail": result.stdout_tail,
            "stderrTail": result.stderr_tail,
        },
    }
    return [
        Outcome(
            capability=caps[0],
            status=test_status,
            reason=test_reason,
            claims=test_marks,
            citations=grounding.receipt_citations(report),
            **common,
        ),
        Outcome(
            capability="discovery",
            status=disc_status,
            reason=disc_reason,
            provider=_provider_for(provider, "discovery"),
            claims=grounding.claim_marks(job, report, disc_status, "discovery")[0],
            **common,
        ),
    ]


def _from_record(
    report: ReportResult | None, result: JobResult
) -> tuple[ReportResult | None, list[Finding]]:
    """The report re-read through the plugin's own record (a test cannot write into it)."""
    recorded = any(n.startswith(f"{grounding.FOLDER}/record-") for n in result.files)
    missing: list[Finding] = []
    if not recorded and grounding.cited_in_report(report):
        missing.append(
            Finding(
                kind="grounding-unavailable",
                severity="error",
                message="the report names claims but changeloop's pytest plugin left no record "
                "of the tests that cite them (the run ended before the plugin wrote it), so no "
                "test credits a claim",
            )
        )
    return grounding.from_record(report, grounding.records_of(result.files)), missing


def _cargo_stopped_early(argv: Sequence[str], exit_code: int | None, report: Any) -> bool:
    """``cargo test`` without ``--no-fail-fast`` that failed a test: it stopped there."""
    words = [a.rsplit("/", 1)[-1] for a in argv]
    counts = report.counts if report is not None else None
    return (
        bool(words)
        and words[0] == "cargo"
        and "test" in words
        and "--no-fail-fast" not in argv
        and exit_code != 0
        and counts is not None
        and counts.failed > 0
    )


def _provider_for(provider: Provider, capability: str) -> str | None:
    """``discovery`` is issued under ``discoveryProvider`` when set, else the provider's name."""
    if capability != "discovery":
        return None
    return provider.discovery_provider or provider.name


def missing_reason(ctx: RunContext) -> str | None:
    """Never asked: this adapter issues a receipt for every capability it runs."""
    return None

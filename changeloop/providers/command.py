"""The ``command`` adapter: one deterministic command, exit 0 ⇒ pass.

With ``envelope: true`` the command's stdout is the custom-runner JSON
envelope ``{exit_code, passed, findings}`` (schema ``runner-envelope.json``).
Both the process and the envelope must agree on success: envelope failure
overrides process success, process failure overrides envelope success, and a
non-zero exit without a valid envelope is a fail with the raw tails.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

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

NAME = "command"
DEFAULT_CAPABILITY = "command"  # plan.py uses the provider's name instead
RUNS_COMMAND = True


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
    return ctx.job(argv, repo=provider.repository, env=ctx.env, log_name=provider.name)


def read(job: Job, result: JobResult) -> list[Outcome]:
    """Pure: the outcome of a finished job (reads only the envelope on its stdout)."""
    return [judge(job.provider, result)]


def judge(provider: Provider, result: ProcessResult | JobResult) -> Outcome:
    """Turn one finished process into the provider's outcome."""
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
        return _judge_envelope(base, result)
    if result.exit_code == 0:
        return base
    return replace(base, status="fail", reason=f"exited {result.exit_code}{_tail_hint(result)}")


def _judge_envelope(base: Outcome, result: ProcessResult | JobResult) -> Outcome:
    """The five outcomes of DESIGN.md §3 (command, envelope: true)."""
    envelope, problem = read_envelope(result)
    code = result.exit_code
    if envelope is None:
        invalid = (Finding(kind="envelope-invalid", message=problem or "", severity="error"),)
        if code == 0:
            why = f"exited 0 but stdout is not a runner envelope: {problem}"
            return replace(base, status="inconclusive", reason=why, findings=invalid)
        why = f"exited {code} without a valid runner envelope ({problem}){_tail_hint(result)}"
        return replace(base, status="fail", reason=why, findings=invalid)
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
        return replace(base, status="fail", reason=why, findings=findings)
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


def read_envelope(result: ProcessResult | JobResult) -> tuple[dict[str, Any] | None, str | None]:
    """Parse and schema-check stdout as a runner envelope; (envelope, None) or (None, why)."""
    from changeloop.schemas import validate_named

    try:
        text = result.stdout_path.read_text(encoding="utf-8").strip()
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

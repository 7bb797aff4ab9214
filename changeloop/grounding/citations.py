"""Grounding on the adapter side: hand the plugin its config, read its record, mark claims.

Example (an adapter's ``prepare`` and ``read``)::

    env = configure(ctx.run_dir, repo, workdir, provider.entry_points, injected.env)
    context = crediting_context(ctx.plan, ctx.provider)
    job = replace(ctx.job(...), collect=(FOLDER,), context=context)
    ... the executor runs pytest with ``env`` ...
    marks, findings = claim_marks(job, report, status)   # the crediting rule, pure
    traced = records_of(result.files)    # the engine: nodeid -> {claims, grounding, functions}
    remember(plan.root, plan.change.id, repo, traced)    # the engine, for mutation and --dry-run

The crediting rule itself lives in :mod:`changeloop.verdict`; this module only
applies it to one report.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from changeloop.executors.job import Job
from changeloop.fsio import load_state_json
from changeloop.grounding.entrypoints import resolve
from changeloop.model import Archetype, ClaimMark, Plan, Provider, Status
from changeloop.outcome import Finding
from changeloop.runner_reports.model import ReportResult
from changeloop.verdict import (
    citation_credits,
    listing_blocked,
    listing_message,
    uncredited_message,
)
from changeloop.workspace.state import StateDir

GROUNDING_ENV = "CHANGELOOP_GROUNDING"  # the same name as in the pytest plugin
CONFIG_FILE = "config.json"
FOLDER = "grounding"  # under the provider's run directory: the config and the records
MAX_CITATIONS = 200  # per claim, in a receipt


def folder(run_dir: Path) -> Path:
    return run_dir / FOLDER


def configure(
    run_dir: Path,
    repository: str,
    workdir: Path,
    patterns: Sequence[str],
    env: Mapping[str, str],
) -> dict[str, str]:
    """``env`` plus ``CHANGELOOP_GROUNDING`` naming a config the plugin reads.

    The entry points are resolved in ``workdir`` (the sandbox the tests run
    in). No patterns: the plugin traces nothing and says ``not-checked``.
    """
    entries = resolve(workdir, patterns).functions if patterns else ()
    doc = {
        "repository": repository,
        "root": str(workdir.resolve()),
        "entryPoints": [e.to_json() for e in entries],
    }
    out = dict(env)
    target = folder(run_dir) / CONFIG_FILE
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(doc), encoding="utf-8")
    except OSError:
        return out
    out[GROUNDING_ENV] = str(target)
    return out


def shipped(run_dir: Path) -> tuple[tuple[str, bytes], ...]:
    """The config :func:`configure` wrote, as a job's ``inputs``: a remote worker writes it
    into its own job directory (the variable's path is re-pointed there), never reads ours."""
    try:
        return ((f"{FOLDER}/{CONFIG_FILE}", (folder(run_dir) / CONFIG_FILE).read_bytes()),)
    except OSError:
        return ()


def read_records(run_dir: Path) -> dict[str, dict[str, Any]]:
    """nodeid -> ``{claims, grounding, reason, functions}`` over every process's record."""
    out: dict[str, dict[str, Any]] = {}
    try:
        files = sorted(folder(run_dir).glob("record-*.json"))
    except OSError:
        return out
    for file in files:
        try:
            doc = json.loads(file.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        tests = doc.get("tests") if isinstance(doc, dict) else None
        if isinstance(tests, dict):
            out.update({str(k): v for k, v in tests.items() if isinstance(v, dict)})
    return out


def records_of(files: Mapping[str, bytes]) -> dict[str, dict[str, Any]]:
    """:func:`read_records` over a job's collected files (``"grounding/record-*.json"``)."""
    out: dict[str, dict[str, Any]] = {}
    for name in sorted(files):
        folder_name, _, base = name.partition("/")
        if folder_name != FOLDER or not (base.startswith("record-") and base.endswith(".json")):
            continue
        try:
            doc = json.loads(files[name].decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            continue
        tests = doc.get("tests") if isinstance(doc, dict) else None
        if isinstance(tests, dict):
            out.update({str(k): v for k, v in tests.items() if isinstance(v, dict)})
    return out


RECORD_LIMIT = 64 * 1024 * 1024  # a traced run of tens of thousands of tests


def record_path(root: Path, change: str, repository: str) -> Path:
    """Where the last traced run of a change's repository is remembered."""
    return StateDir(root).path / "grounding" / change / f"{repository}.json"


def remember(root: Path, change: str, repository: str, traced: Mapping[str, Any]) -> None:
    """Keep the last traced run's record (the mutation adapter and ``--dry-run`` read it)."""
    if not traced:
        return
    target = record_path(root, change, repository)
    with contextlib.suppress(OSError):
        target.parent.mkdir(parents=True, exist_ok=True)
        temp = target.with_name(f".{target.name}.tmp")
        temp.write_text(json.dumps({"tests": dict(traced)}, sort_keys=True), encoding="utf-8")
        temp.replace(target)


def last_record(root: Path, change: str, repository: str) -> dict[str, dict[str, Any]] | None:
    """The last traced run's tests, or None when no traced run exists yet."""
    doc = load_state_json(record_path(root, change, repository), limit=RECORD_LIMIT)
    tests = doc.get("tests") if isinstance(doc, dict) else None
    return tests if isinstance(tests, dict) else None


def receipt_citations(report: ReportResult | None) -> dict[str, tuple[dict[str, Any], ...]]:
    """claim -> ``[{test, depth, ref, result, grounding}]``, one per test–claim pair."""
    out: dict[str, list[dict[str, Any]]] = {}
    for case in (report.tests or ()) if report else ():
        extra = {c.claim: c for c in case.citations}
        for claim in case.claims:
            cite = extra.get(claim)
            entries = out.setdefault(claim, [])
            if len(entries) >= MAX_CITATIONS:
                continue
            entries.append(
                {
                    "test": case.id,
                    "depth": cite.depth if cite else None,
                    "ref": cite.ref if cite else None,
                    "result": case.outcome,
                    "grounding": (cite.grounding if cite else None) or "not-checked",
                }
            )
    return {claim: tuple(entries) for claim, entries in sorted(out.items())}


def crediting_context(plan: Plan, provider: Provider) -> dict[str, Any]:
    """What :func:`claim_marks` needs of the plan, as JSON-able data for ``Job.context``."""
    claims = plan.evidence.claims
    return {
        "archetypes": {cid: claim.archetype for cid, claim in sorted(claims.items())},
        "listingBlocked": sorted(
            cid for cid, claim in claims.items() if listing_blocked(plan, claim, provider)
        ),
    }


def claim_marks(
    job: Job, report: ReportResult | None, status: Status, capability: str = "test"
) -> tuple[dict[str, ClaimMark], list[Finding]]:
    """Claim marks for one receipt, with the §11 crediting rule, and ``ungrounded`` findings.

    A test that passed citing a claim credits it only when its grounding fits the
    claim's archetype; a failing citing test fails it; a claim listed in the
    provider's ``claims`` is credited by a passing run unless its repository
    declares entry points (then a behavioral claim needs a grounded citation).
    Pure: the plan's part comes in ``job`` (:func:`crediting_context`, ``job.claims``).
    """
    provider = job.provider
    known: Mapping[str, Archetype] = job.context.get("archetypes", {})
    blocked = set(job.context.get("listingBlocked", ()))
    marks: dict[str, ClaimMark] = dict.fromkeys(
        job.claims.claims_requiring(capability), "uncredited"
    )
    passing: dict[str, list[tuple[str, str | None]]] = {}
    failing: set[str] = set()
    for case in (report.tests or ()) if report else ():
        groundings = {c.claim: c.grounding for c in case.citations}
        for cited in case.claims:
            if case.outcome in ("failed", "error"):
                failing.add(cited)
            elif case.outcome == "passed" and not case.flaky:
                passing.setdefault(cited, []).append((case.id, groundings.get(cited)))
    for cited in (*provider.claims, *sorted(set(passing) | failing)):
        if cited in known:  # a test citing an id the evidence does not declare credits nothing
            marks.setdefault(cited, "uncredited")
    findings: list[Finding] = []
    for cid in marks:
        archetype = known.get(cid)
        if cid in failing:
            marks[cid] = "failed"
            continue
        if status == "fail" and cid in provider.claims:
            marks[cid] = "failed"
            continue
        if status != "pass" or archetype is None:
            continue
        cites = passing.get(cid, [])
        if any(citation_credits(archetype, g) for _, g in cites):
            marks[cid] = "credited"
        elif cites:
            named = [(test, g or "not-checked") for test, g in cites]
            message = uncredited_message(cid, archetype, named)
            findings.append(Finding(kind="ungrounded", message=message, severity="error"))
        elif cid in provider.claims and archetype == "behavioral":
            if cid in blocked:
                message = listing_message(cid, provider.name)
                findings.append(Finding(kind="ungrounded", message=message, severity="error"))
            else:
                marks[cid] = "credited"
        elif cid in provider.claims:
            marks[cid] = "credited"  # structural, listed: the listing rule is for behavioral
    return marks, findings


def not_checked_findings(report: ReportResult | None) -> list[Finding]:
    """One ``grounding-not-checked`` warning per distinct reason the trace was in doubt.

    A repository that declares no entry points is not warned about: it did not ask
    for grounding (its citations say ``not-checked`` and the plugin's
    ``grounding-reason`` says why).
    """
    reasons: dict[str, None] = {}
    for case in (report.tests or ()) if report else ():
        for cite in case.citations:
            if (
                cite.grounding == "not-checked"
                and cite.reason
                and not cite.reason.startswith("no entry points declared")
            ):
                reasons[cite.reason] = None
    return [
        Finding(kind="grounding-not-checked", message=reason, severity="warning")
        for reason in list(reasons)[:5]
    ]

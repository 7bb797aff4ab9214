"""Grounding on the adapter side: hand the plugin its config, read its record, mark claims.

Example (an adapter's ``prepare`` and ``read``)::

    env = configure(ctx.run_dir, repo, workdir, provider.entry_points, injected.env)
    context = crediting_context(ctx.plan, ctx.provider)
    job = replace(ctx.job(...), collect=(FOLDER,), context=context)
    ... the executor runs pytest with ``env`` ...
    traced = records_of(result.files)    # nodeid -> {claims, grounding, functions, ...}
    report = from_record(report, traced)  # the plugin ran: claims and groundings from it alone
    report, problems = check_depths(report, entry_points=bool(provider.entry_points))
    marks, findings = claim_marks(job, report, status)   # the crediting rule, pure
    remember(plan.root, plan.change.id, repo, traced)    # the engine, for mutation and --dry-run

Where changeloop's plugin ran, a test's claims and grounding come only from the
plugin's own record (a file the run directory holds, outside the report), never
from report properties a test could write (``record_property("grounding", …)``).
The crediting rule itself lives in :mod:`changeloop.verdict`; this module only
applies it to one report.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from changeloop.executors.job import Job
from changeloop.fsio import load_state_json
from changeloop.grounding.entrypoints import resolve
from changeloop.model import Archetype, ClaimMark, Plan, Provider, Status
from changeloop.outcome import Finding
from changeloop.runner_reports.model import (
    DEPTHS,
    Citation,
    ReportResult,
    TestCase,
    normal_depth,
)
from changeloop.verdict import (
    citation_credits,
    entry_points_declared,
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
    *,
    lines: bool = False,
) -> dict[str, str]:
    """``env`` plus ``CHANGELOOP_GROUNDING`` naming a config the plugin reads.

    The entry points are resolved in ``workdir`` (the sandbox the tests run
    in). No patterns: the plugin traces nothing and says ``not-checked``.
    ``lines``: record the production lines each citing test ran (mutation).
    """
    entries = resolve(workdir, patterns).functions if patterns else ()
    doc = {
        "repository": repository,
        "root": str(workdir.resolve()),
        "entryPoints": [e.to_json() for e in entries],
        "lines": lines,
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
    """claim -> ``[{test, depth, ref, result, grounding, …}]``, one per test–claim pair.

    ``reached_outside_entry``, ``groundedBy`` and ``observer`` appear only where
    they were observed (never null).
    """
    out: dict[str, list[dict[str, Any]]] = {}
    for case in (report.tests or ()) if report else ():
        extra = {c.claim: c for c in case.citations}
        for claim in case.claims:
            cite = extra.get(claim)
            entries = out.setdefault(claim, [])
            if len(entries) >= MAX_CITATIONS:
                continue
            depth = normal_depth(cite.depth) if cite else None
            entry: dict[str, Any] = {
                "test": case.id,
                "depth": depth if depth in DEPTHS else None,
                "ref": cite.ref if cite else None,
                "result": case.outcome,
                "grounding": (cite.grounding if cite else None) or "not-checked",
            }
            if cite is not None and cite.reached_outside_entry is not None:
                entry["reached_outside_entry"] = cite.reached_outside_entry
            if cite is not None and cite.grounded_by:
                entry["groundedBy"] = cite.grounded_by
            if cite is not None and cite.observer:
                entry["observer"] = dict(cite.observer)
            entries.append(entry)
    return {claim: tuple(entries) for claim, entries in sorted(out.items())}


# -- the tracer's record is the only source where the plugin ran ---------------------------------


def citations_of_record(record: Mapping[str, Any]) -> tuple[tuple[str, ...], tuple[Citation, ...]]:
    """(claims, citations) of one test as the plugin recorded them."""
    claims = record.get("claims")
    table = claims if isinstance(claims, Mapping) else {key: {} for key in claims or ()}
    grounding = record.get("grounding")
    grounding = grounding if isinstance(grounding, str) and grounding in GROUNDINGS else None
    reason = record.get("reason")
    reached = record.get("reached_outside_entry")
    by = record.get("groundedBy")
    out: list[Citation] = []
    for claim, given in table.items():
        extra = given if isinstance(given, Mapping) else {}
        depth, ref = extra.get("depth"), extra.get("ref")
        out.append(
            Citation(
                str(claim),
                depth=str(depth) if depth is not None else None,
                ref=str(ref) if ref is not None else None,
                grounding=grounding,
                reason=str(reason)[:500] if isinstance(reason, str) else None,
                reached_outside_entry=reached if isinstance(reached, bool) else None,
                grounded_by=str(by) if isinstance(by, str) and by else None,
            )
        )
    return tuple(c.claim for c in out), tuple(out)


GROUNDINGS = ("grounded", "ungrounded", "inert", "untouched", "dispatched", "not-checked")


def from_record(report: ReportResult | None, traced: Mapping[str, Any]) -> ReportResult | None:
    """The report with every test's claims and citations taken from the plugin's record.

    A test the record does not hold cites nothing, whatever its report says (a
    ``claim`` property written without the marker, a ``grounding`` property).
    """
    if report is None or report.tests is None:
        return report
    index: dict[str, Mapping[str, Any]] = {}
    for nodeid, record in traced.items():
        if not isinstance(record, Mapping):
            continue
        index[str(nodeid)] = record
        junit = record.get("junit")
        if isinstance(junit, list) and len(junit) == 2:
            index[f"{junit[0]}::{junit[1]}" if junit[0] else str(junit[1])] = record
    tests: list[TestCase] = []
    for case in report.tests:
        record = index.get(case.id)
        claims, cites = citations_of_record(record) if record is not None else ((), ())
        tests.append(replace(case, claims=claims, citations=cites))
    return replace(report, tests=tuple(tests))


def cited_in_report(report: ReportResult | None) -> bool:
    """Whether any test of the report names a claim (by any means the report carries)."""
    return any(case.claims for case in (report.tests or ())) if report else False


def check_depths(
    report: ReportResult | None, *, entry_points: bool
) -> tuple[ReportResult | None, list[Finding]]:
    """The report with depths normalized (``e2e`` → ``smoke``), and the refusals.

    A depth that is not one of :data:`DEPTHS` is refused by name, from any
    source (``citation-depth-invalid``). Once the repository declares entry
    points, a citation without a depth is a hard error naming the test
    (``citation-depth-missing``): an untagged test cannot be placed. Either
    fails the receipt (the caller's rule).
    """
    if report is None or report.tests is None:
        return report, []
    invalid: list[str] = []
    missing: list[str] = []
    tests: list[TestCase] = []
    for case in report.tests:
        cites = {c.claim: c for c in case.citations}
        fixed: list[Citation] = []
        for claim in case.claims:
            cite = cites.get(claim) or Citation(claim)
            depth = normal_depth(cite.depth)
            if depth is not None and depth not in DEPTHS:
                invalid.append(f"{case.id} cites {claim} with depth {cite.depth!r}")
                depth = None
            elif depth is None and entry_points:
                missing.append(f"{case.id} ({claim})")
            fixed.append(replace(cite, depth=depth))
        tests.append(replace(case, citations=tuple(fixed)) if case.claims else case)
    findings: list[Finding] = []
    allowed = ", ".join(DEPTHS)
    if invalid:
        findings.append(
            Finding(
                kind="citation-depth-invalid",
                severity="error",
                message=_bounded(
                    f"depth must be one of {allowed} (e2e is an alias of smoke): ", invalid
                ),
            )
        )
    if missing:
        findings.append(
            Finding(
                kind="citation-depth-missing",
                severity="error",
                message=_bounded(
                    "the repository declares entry points, so every citation says its depth "
                    f"({allowed}); without one: ",
                    missing,
                ),
            )
        )
    return replace(report, tests=tuple(tests)), findings


def _bounded(head: str, items: Sequence[str], limit: int = 20) -> str:
    more = f" (and {len(items) - limit} more)" if len(items) > limit else ""
    return head + "; ".join(items[:limit]) + more


def crediting_context(plan: Plan, provider: Provider) -> dict[str, Any]:
    """What :func:`claim_marks` needs of the plan, as JSON-able data for ``Job.context``."""
    claims = plan.evidence.claims
    return {
        "archetypes": {cid: claim.archetype for cid, claim in sorted(claims.items())},
        "listingBlocked": sorted(
            cid for cid, claim in claims.items() if listing_blocked(plan, claim, provider)
        ),
        "entryPoints": entry_points_declared(plan, provider.repository),
    }


def claim_marks(
    job: Job, report: ReportResult | None, status: Status, capability: str = "test"
) -> tuple[dict[str, ClaimMark], list[Finding]]:
    """Claim marks for one receipt, with the crediting rule, and why a citation did not credit.

    A test that passed citing a claim credits it only when its grounding fits the
    claim's archetype; a failing citing test fails it; a claim listed in the
    provider's ``claims`` is credited by a passing run unless its repository
    declares entry points (then a behavioral claim needs a grounded citation).
    Under declared entry points a citation no tracer observed (``not-checked``)
    never credits: finding ``grounding-unavailable`` names the tests and why.
    Pure: the plan's part comes in ``job`` (:func:`crediting_context`, ``job.claims``).
    """
    provider = job.provider
    known: Mapping[str, Archetype] = job.context.get("archetypes", {})
    blocked = set(job.context.get("listingBlocked", ()))
    entry_points = bool(job.context.get("entryPoints", bool(provider.entry_points)))
    marks: dict[str, ClaimMark] = dict.fromkeys(
        job.claims.claims_requiring(capability), "uncredited"
    )
    passing: dict[str, list[tuple[str, Citation | None]]] = {}
    failing: set[str] = set()
    for case in (report.tests or ()) if report else ():
        by_claim = {c.claim: c for c in case.citations}
        for cited in case.claims:
            if case.outcome in ("failed", "error"):
                failing.add(cited)
            elif case.outcome == "passed" and not case.flaky:
                passing.setdefault(cited, []).append((case.id, by_claim.get(cited)))
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
        groundings = [(test, _grounding(c)) for test, c in cites]
        if any(citation_credits(archetype, g, entry_points=entry_points) for _, g in groundings):
            marks[cid] = "credited"
        elif cites:
            findings.append(_uncredited(cid, archetype, cites, entry_points=entry_points))
        elif cid in provider.claims and archetype == "behavioral":
            if cid in blocked:
                message = listing_message(cid, provider.name)
                findings.append(Finding(kind="ungrounded", message=message, severity="error"))
            else:
                marks[cid] = "credited"
        elif cid in provider.claims:
            marks[cid] = "credited"  # structural, listed: the listing rule is for behavioral
    return marks, findings


def _grounding(cite: Citation | None) -> str:
    return (cite.grounding if cite else None) or "not-checked"


def _uncredited(
    cid: str,
    archetype: Archetype,
    cites: Sequence[tuple[str, Citation | None]],
    *,
    entry_points: bool,
) -> Finding:
    """``grounding-unavailable`` when no tracer could observe the passing citations under
    declared entry points; ``ungrounded`` when it observed them and they do not fit."""
    named = [(test, _grounding(c)) for test, c in cites]
    if entry_points and all(g == "not-checked" for _, g in named):
        why = sorted({(c.reason if c and c.reason else "no tracer observed it") for _, c in cites})
        tests = ", ".join(test for test, _ in named[:20])
        message = (
            f"claim {cid}: the repository declares entry points but no tracer observed its "
            f"citing tests, so they credit nothing ({'; '.join(why[:5])}): {tests}"
        )
        return Finding(kind="grounding-unavailable", message=message, severity="error")
    message = uncredited_message(cid, archetype, named)
    return Finding(kind="ungrounded", message=message, severity="error")


def not_checked_findings(report: ReportResult | None) -> list[Finding]:
    """One ``grounding-not-checked`` warning per distinct reason the trace was in doubt.

    A repository that declares no entry points is not warned about: it did not ask
    for grounding (its citations say ``not-checked`` and the record says why).
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

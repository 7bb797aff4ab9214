"""Fill the report's view-model from ``gate`` and the run's ``run.json``: composition only.

Example::

    report = collect(plan, run_id=None, out_dir=page.parent)   # a report.model.Report

Verification is ``gate``'s, not a second set of checks: :func:`gate.evaluate`
reads and re-verifies every receipt (signature, content, wiring) and
:func:`changeloop.verdict.decide` judges what survived. Each part of the page
has its own module: :mod:`~changeloop.report.runs` (which run, its receipts,
its timeline), :mod:`~changeloop.report.refs` (receipts as the page names
them), :mod:`~changeloop.report.matrix` (claims × capabilities),
:mod:`~changeloop.report.providers`, :mod:`~changeloop.report.findings`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from changeloop import __version__, gate
from changeloop.errors import ChangeloopError, Problem
from changeloop.git.identity import content_identity
from changeloop.model import Plan
from changeloop.report.findings import findings_of
from changeloop.report.links import Links
from changeloop.report.matrix import claim_rows
from changeloop.report.model import RepoIdentity, Report, RequireRow
from changeloop.report.providers import provider_rows
from changeloop.report.refs import refs_of, worst_statuses
from changeloop.report.runs import find_run, run_envelopes, timeline_of
from changeloop.report.steps import report_steps
from changeloop.run import runlog
from changeloop.run.current import current_fingerprints

if TYPE_CHECKING:
    from changeloop.trust import Trust


def collect(
    plan: Plan,
    *,
    run_id: str | None = None,
    public_keys: Sequence[Ed25519PublicKey] = (),
    out_dir: Path | None = None,
    trust: Trust | None = None,
) -> Report:
    """Everything the page shows; ``out_dir`` is where the page goes (for relative links)."""
    run_dir = find_run(plan, run_id)
    record = runlog.load(run_dir) if run_dir is not None else None
    if record is not None and record.get("change") != plan.change.id:
        raise ChangeloopError(
            Problem(
                code="run_of_other_change",
                message=f"run {run_id} proved change {record.get('change')!r}, "
                f"not {plan.change.id!r}",
                fix="name a run of this change with --run, or omit it",
            )
        )
    local = None
    if run_id is not None and record is not None and run_dir is not None:
        local = run_envelopes(plan, run_dir, record)
    result = gate.evaluate(plan, public_keys, local=local, fingerprint=current_fingerprints(plan))
    links = Links(plan.root, out_dir or plan.root)
    refs = refs_of(result)
    capabilities, claims = claim_rows(plan, result, refs)
    requires = tuple(
        RequireRow(cap, repo, status)
        for cap, per in sorted(result.requires.items())
        for repo, status in sorted(per.items())
    )
    sandbox = str(record.get("sandbox", "none")) if record else "none"
    cells = [c for row in claims for c in row.cells.values() if c is not None]
    carried = (plan.change.path / "receipts" / "summary.intoto.jsonl").is_file()
    return Report(
        change=plan.change.id,
        proven=result.proven,
        reasons=tuple(r.message for r in result.reasons)
        + tuple(
            f"claim {cid} is {c.status}" for cid, c in result.claims.items() if c.status != "proven"
        ),
        repositories=_identities(plan, sandbox),
        run_id=str(record["runId"]) if record else None,
        run_started=str(record.get("startedOn")) if record else None,
        version=__version__,
        capabilities=capabilities,
        claims=claims,
        requires=requires,
        providers=provider_rows(plan, result, record, refs, links),
        timeline=timeline_of(record, worst_statuses(refs)) if record is not None else None,
        findings=findings_of(plan, result, links),
        set_aside=tuple(r for r in refs.all if not r.verified or r.code),
        next_steps=report_steps(
            plan,
            proven=result.proven,
            cells=[c for c in cells if c.status != "proven"],
            summary_carried=carried,
        ),
        trust=trust.describe() if trust is not None else "this checkout",
        trust_changed=tuple(c.message for c in trust.changed) if trust is not None else (),
    )


def _identities(plan: Plan, sandbox: str) -> tuple[RepoIdentity, ...]:
    """The header's content identity of each repository, in the run's sandbox mode."""
    out = []
    for name, repo in sorted(plan.repositories.items()):
        try:
            ident = content_identity(repo.path, include_untracked=sandbox != "worktree")
        except ChangeloopError:
            continue
        out.append(RepoIdentity(name, ident.tree, ident.head, ident.dirty))
    return tuple(out)

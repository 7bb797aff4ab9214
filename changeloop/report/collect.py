"""Fill the report's view-model from ``gate`` and the run's ``run.json``.

Verification is ``gate``'s, not a second set of checks: :func:`gate.evaluate`
reads and re-verifies every receipt (signature, content, wiring) and
:func:`changeloop.verdict.decide` judges what survived. A cell is that same
verdict over a one-capability copy of its claim (as gate does per claim), and
an envelope gate set aside shows as *not verified* or *stale* — never as a pass.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from changeloop import __version__, gate, runlog
from changeloop.dsse import VerificationError, read_envelope
from changeloop.errors import ChangeloopError, Problem
from changeloop.identity import content_identity
from changeloop.model import Claim, Plan
from changeloop.report import timeline as gantt
from changeloop.report.model import (
    Bar,
    Cell,
    CellStatus,
    ClaimRow,
    Counts,
    FindingItem,
    ProviderRow,
    ReceiptRef,
    RepoIdentity,
    Report,
    RequireRow,
    Timeline,
)
from changeloop.state import StateDir
from changeloop.verdict import decide
from changeloop.verify import parse_time

STATUS_RANK = {"pass": 0, "inconclusive": 1, "fail": 2}
ASIDE_STATUS: dict[str, CellStatus] = {
    "unverified": "not-verified",
    "stale-content": "stale-content",
    "stale-wiring": "stale-wiring",
}


# -- which run -----------------------------------------------------------------
def find_run(plan: Plan, run_id: str | None) -> Path | None:
    """``--run``'s directory (refused when unknown), else the change's newest recorded run."""
    runs = StateDir(plan.root).runs
    if run_id is not None:
        path = runs / run_id
        if run_id in ("", ".", "..") or "/" in run_id or not path.is_dir():
            known = (
                sorted((p.name for p in runs.iterdir() if p.is_dir()), reverse=True)[:5]
                if (runs.is_dir())
                else []
            )
            raise ChangeloopError(
                Problem(
                    code="unknown_run",
                    message=f"no run {run_id!r} under {runs.relative_to(plan.root)}"
                    + (f" (newest: {', '.join(known)})" if known else " (no run recorded yet)"),
                    fix="omit --run to use the change's latest run, or name one of the above",
                )
            )
        return path
    if not runs.is_dir():
        return None
    # Run ids sort by second only; within one second the recorded start decides. A run
    # whose run.json is missing or damaged is passed over (--run names it to see why).
    newest: tuple[str, str, Path] | None = None
    for path in (p for p in runs.iterdir() if p.is_dir()):
        try:
            data = runlog.load(path)
        except ChangeloopError:
            continue
        if data["change"] == plan.change.id:
            key = (str(data["startedOn"]), path.name, path)
            if newest is None or key[:2] > newest[:2]:
                newest = key
    return newest[2] if newest else None


# -- the report ----------------------------------------------------------------
def collect(
    plan: Plan,
    *,
    run_id: str | None = None,
    public_keys: Sequence[Ed25519PublicKey] = (),
    out_dir: Path | None = None,
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
        # Only envelopes inside that run's own directory, whatever run.json says.
        inside = run_dir.resolve()
        local = [
            file
            for p in runlog.providers_of(record).values()
            for path in p.get("receipts", [])
            if (file := (plan.root / path).resolve()).is_relative_to(inside) and file.is_file()
        ]
    result = gate.evaluate(plan, public_keys, local=local)
    links = _Links(plan.root, out_dir or plan.root)
    refs = _refs(plan, result)
    capabilities = tuple(
        dict.fromkeys(c for cl in plan.evidence.claims.values() for c in cl.requires)
    )
    claims = tuple(
        ClaimRow(
            id=cid,
            statement=claim.statement,
            ref=claim.ref,
            status=result.claims[cid].status if cid in result.claims else "unproven",
            cells={
                cap: _cell(plan, claim, cap, result, refs) if cap in claim.requires else None
                for cap in capabilities
            },
        )
        for cid, claim in sorted(plan.evidence.claims.items())
    )
    requires = tuple(
        RequireRow(cap, repo, status)
        for cap, per in sorted(result.requires.items())
        for repo, status in sorted(per.items())
    )
    sandbox = str(record.get("sandbox", "none")) if record else "none"
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
        providers=_providers(plan, result, record, refs, links),
        timeline=_timeline(plan, record, refs),
        findings=_findings(plan, result, links),
        set_aside=tuple(r for r in refs.all if not r.verified or r.code),
    )


# -- receipts as the report names them --------------------------------------------
@dataclasses.dataclass
class _Refs:
    kept: dict[int, ReceiptRef]  # id(gate.Kept) -> ref
    aside: dict[int, ReceiptRef]  # id(gate.SetAside) -> ref
    all: list[ReceiptRef]


def _refs(plan: Plan, result: gate.GateResult) -> _Refs:  # noqa: ARG001 (kept for its callers)
    kept: dict[int, ReceiptRef] = {}
    aside: dict[int, ReceiptRef] = {}
    for k in result.kept:
        ext = k.verified.extension
        kept[id(k)] = ReceiptRef(
            id=k.verified.id,
            provider=k.view.provider,
            capability=k.view.capability,
            status=k.view.status,
            path=k.envelope.uri,
            issuer=_issuer(ext),
            keyid=k.verified.keyid,
            verified=True,
        )
    for s in result.set_aside:
        aside[id(s)] = ReceiptRef(
            id=None,
            provider=_claimed_provider(s.envelope.path),
            capability=s.capability,
            status=None,
            path=s.envelope.uri,
            issuer=None,
            keyid=None,
            verified=s.code not in ("unverified",),
            problem=s.message,
            code=s.code,
        )
    return _Refs(kept, aside, [*kept.values(), *aside.values()])


def _issuer(ext: Mapping[str, Any]) -> str:
    """Who signed; for an external provider's receipt, also whose evidence it accepted."""
    issuer = str(ext.get("issuer"))
    details = ext.get("details")
    accepted = details.get("acceptedIssuer") if isinstance(details, dict) else None
    return f"{issuer} (accepted from {accepted})" if accepted else issuer


def _claimed_provider(path: Path) -> str:
    """Which provider a set-aside envelope *says* it is from: display only, never trusted."""
    try:
        envelope = json.loads(read_envelope(path))
        payload = json.loads(base64.b64decode(envelope["payload"] + "=="))
        name = payload["predicate"]["changeloop"]["provider"]
        if isinstance(name, str):
            return name
    except (OSError, ValueError, KeyError, TypeError, RecursionError, VerificationError):
        pass
    return path.name.split(".", 1)[0]


# -- cells ---------------------------------------------------------------------
def _cell(plan: Plan, claim: Claim, capability: str, result: gate.GateResult, refs: _Refs) -> Cell:
    cid = claim.id
    views = [k.view for k in result.kept]
    single = dataclasses.replace(claim, requires=(capability,))
    evidence = dataclasses.replace(plan.evidence, claims={cid: single}, requires={})
    part = decide(dataclasses.replace(plan, evidence=evidence), views).claims[cid]
    status: CellStatus = part.status
    reasons = list(part.reasons)
    aside = [s for s in result.set_aside if gate.speaks_for(s, capability, claim.repository)]
    fatal = [s for s in aside if s.code == "unverified" and s.fatal]
    if status == "proven" and fatal:
        # gate fails closed: an envelope that does not verify may have spoken here.
        status = "not-verified"
    elif status == "unproven" and aside:
        first = fatal[0] if fatal else aside[0]
        status = ASIDE_STATUS.get(first.code, "unproven")
        reasons = []
    reasons += [s.message for s in aside if s.message not in reasons]
    scoped = [
        k
        for k in result.kept
        if k.view.capability == capability
        and (claim.repository is None or claim.repository in k.view.repositories)
    ]
    mentioning = [k for k in scoped if cid in k.view.claims] or scoped
    tests: list[str] = []
    grounding = mutation = None
    for k in mentioning:
        ext = k.verified.extension
        if k.view.claims.get(cid) == "credited":
            planned = gate.plan_provider(plan, k.view.provider)
            listed = planned is not None and cid in planned.claims
            tests += _crediting_tests(cid, k.verified.statement, ext, listed=listed)
        grounding = grounding or _grounding(cid, ext)
        mutation = mutation or _mutation(cid, ext)
    return Cell(
        capability=capability,
        status=status,
        reasons=tuple(reasons),
        receipts=tuple(refs.kept[id(k)] for k in mentioning)
        + tuple(refs.aside[id(s)] for s in aside),
        tests=tuple(dict.fromkeys(tests)),
        grounding=grounding,
        mutation=mutation,
    )


def _crediting_tests(
    cid: str, statement: Mapping[str, Any], ext: Mapping[str, Any], *, listed: bool
) -> list[str]:
    """What credited ``cid``: cited tests where the receipt names them, else how it was credited."""
    cited = ext.get("citations")
    entries = cited.get(cid) if isinstance(cited, dict) else None
    if isinstance(entries, list):
        names = [c.get("test") if isinstance(c, dict) else c for c in entries]
        if any(names):
            return [str(n) for n in names if n]
    passed = [str(t) for t in statement.get("predicate", {}).get("passedTests") or []]
    tagged = [t for t in passed if f"[claim:{cid}]" in t]
    if tagged:
        return tagged
    if listed:
        return [f"listed by provider {ext.get('provider')}"]
    if passed:
        return [f"cited by a passing test ({len(passed)} passed)"]
    return []


def _grounding(cid: str, ext: Mapping[str, Any]) -> str | None:
    cited = ext.get("citations")
    if not isinstance(cited, dict) or not isinstance(cited.get(cid), list):
        return None
    entries = cited[cid]
    kinds = [str(c.get("kind", "grounded")) for c in entries if isinstance(c, dict)]
    if kinds:
        counts = {k: kinds.count(k) for k in dict.fromkeys(kinds)}
        return ", ".join(f"{n} {k}" for k, n in counts.items())
    return f"{len(entries)} citation(s)"


def _mutation(cid: str, ext: Mapping[str, Any]) -> str | None:
    score = (ext.get("mutation") or {}).get(cid) if isinstance(ext.get("mutation"), dict) else None
    if not isinstance(score, dict):
        return None
    total, killed = score.get("total"), score.get("killed")
    if not isinstance(total, int) or not isinstance(killed, int):
        return None
    return f"{killed}/{total} mutants killed" if total else "no mutant (inconclusive)"


# -- header ----------------------------------------------------------------------
def _identities(plan: Plan, sandbox: str) -> tuple[RepoIdentity, ...]:
    out = []
    for name, repo in sorted(plan.repositories.items()):
        try:
            ident = content_identity(repo.path, include_untracked=sandbox != "worktree")
        except ChangeloopError:
            continue
        out.append(RepoIdentity(name, ident.tree, ident.head, ident.dirty))
    return tuple(out)


# -- providers -------------------------------------------------------------------
class _Links:
    """Paths relative to the workspace root, and links relative to the page."""

    def __init__(self, root: Path, out_dir: Path) -> None:
        self.root = root.resolve()
        self.out_dir = out_dir.resolve()

    def href(self, rel: str) -> str:
        target = self.root / rel
        return Path(os.path.relpath(target, self.out_dir)).as_posix()


def _providers(
    plan: Plan,
    result: gate.GateResult,
    record: Mapping[str, Any] | None,
    refs: _Refs,
    links: _Links,
) -> tuple[ProviderRow, ...]:
    runs = runlog.providers_of(record or {})
    names = list(dict.fromkeys([*runs, *(k.view.provider for k in result.kept)]))
    names += [r.provider for r in refs.aside.values() if r.provider not in names]
    rows = []
    for name in names:
        kept = [k for k in result.kept if k.view.provider == name]
        aside = [r for r in refs.aside.values() if r.provider == name]
        planned = gate.plan_provider(plan, name)
        run = runs.get(name, {})
        exts = [k.verified.extension for k in kept]
        status = max(
            (k.view.status for k in kept), key=lambda s: STATUS_RANK.get(s, 0), default=None
        )
        tests = next((_counts(e.get("tests")) for e in exts if e.get("tests")), None)
        if any(r.code == "unverified" for r in aside):
            verified = "not verified"
            status = None if not kept else status
        elif aside and not kept:
            verified = "stale"
        elif kept:
            verified = "verified"
        else:
            verified = "no receipt"
        log = _log(plan, record, name, links)
        duration = run.get("durationMs")
        if duration is None and exts:
            duration = exts[0].get("durationMs")
        rows.append(
            ProviderRow(
                name=name,
                adapter=str(
                    run.get("adapter")
                    or (planned.adapter if planned else None)
                    or (exts[0].get("adapter") if exts else "?")
                ),
                repository=run.get("repository")
                or (planned.repository if planned else None)
                or (", ".join(kept[0].view.repositories) if kept else None),
                state=_state(run) if run else _unrun_state(kept),
                status=status,
                duration_ms=duration if isinstance(duration, int) else None,
                tests=tests,
                findings=sum(len(e.get("findings") or []) for e in exts),
                log=log,
                log_href=links.href(log) if log else None,
                issuer=", ".join(sorted({_issuer(e) for e in exts})) or None,
                verified=verified,  # type: ignore[arg-type]
                receipts=tuple(refs.kept[id(k)] for k in kept) + tuple(aside),
            )
        )
    return tuple(rows)


def _unrun_state(kept: Sequence[gate.Kept]) -> str:
    """A provider the recorded run does not list: its receipts were committed or imported."""
    if kept and all(k.envelope.source == "committed" for k in kept):
        return "committed"
    return "unknown"


def _state(run: Mapping[str, Any]) -> str:
    if run.get("origin") == "shared":
        return "shared"
    return str(run.get("state") or "unknown")


def _counts(tests: Any) -> Counts | None:
    if not isinstance(tests, dict):
        return None
    try:
        return Counts(
            int(tests["discovered"]),
            int(tests["passed"]),
            int(tests["failed"]),
            int(tests["skipped"]),
        )
    except (KeyError, TypeError, ValueError):
        return None


def _log(plan: Plan, record: Mapping[str, Any] | None, name: str, links: _Links) -> str | None:
    if not record:
        return None
    folder = StateDir(plan.root).runs / str(record.get("runId")) / name
    logs = sorted(folder.glob("*.log")) if folder.is_dir() else []
    if not logs:
        return None
    rel = logs[-1].resolve().relative_to(links.root).as_posix()
    return rel


# -- timeline --------------------------------------------------------------------
def _timeline(plan: Plan, record: Mapping[str, Any] | None, refs: _Refs) -> Timeline | None:  # noqa: ARG001 (kept for its callers)
    if record is None:
        return None
    worst: dict[str, str] = {}
    for r in refs.kept.values():
        if r.status is not None and STATUS_RANK.get(r.status, 0) >= STATUS_RANK.get(
            worst.get(r.provider, "pass"), 0
        ):
            worst[r.provider] = r.status
    for r in refs.aside.values():
        if r.code == "unverified":
            worst[r.provider] = "unknown"
    try:
        origin = parse_time(str(record["startedOn"])).timestamp()
    except (KeyError, ValueError):
        origin = None
    bars: list[Bar] = []
    not_drawn: list[tuple[str, str]] = []
    deps: dict[str, Sequence[str]] = {}
    for p in runlog.providers_of(record).values():
        name = str(p.get("name"))
        deps[name] = [str(d) for d in p.get("dependencies") or []]
        if p.get("state") != "ran" or p.get("start") is None or p.get("end") is None:
            why = {"cached": "cached: reused a pass"}.get(str(p.get("state")), "not run")
            not_drawn.append((name, why))
            continue
        start = parse_time(str(p["start"])).timestamp()
        end = parse_time(str(p["end"])).timestamp()
        base = origin if origin is not None else start
        bars.append(
            Bar(
                provider=name,
                slot=int(p.get("slot") or 0),
                start_s=max(start - base, 0.0),
                end_s=max(end - base, 0.0),
                status=worst.get(name, "unknown"),
            )
        )
    total = 0.0
    finished = record.get("finishedOn")
    if origin is not None and finished:
        total = max(parse_time(str(finished)).timestamp() - origin, 0.0)
    return Timeline(
        slots=max(
            1, min(int(record.get("slots") or 1), 1 + max((b.slot for b in bars), default=0))
        ),
        total_s=total,
        bars=tuple(gantt.bars_with_critical(bars, deps)),
        not_drawn=tuple(not_drawn),
    )


# -- findings --------------------------------------------------------------------
def _findings(
    plan: Plan, result: gate.GateResult, links: _Links
) -> dict[str, tuple[FindingItem, ...]]:
    groups: dict[str, list[FindingItem]] = {}
    for k in result.kept:
        ext = k.verified.extension
        repos = list(k.view.repositories)
        for f in _as_list(ext.get("findings")):
            if not isinstance(f, dict) or not isinstance(f.get("kind"), str):
                continue
            location, href = _where(plan, repos, f, links)
            groups.setdefault(f["kind"], []).append(
                FindingItem(
                    kind=f["kind"],
                    message=str(f.get("message", "")),
                    severity=str(f["severity"]) if f.get("severity") else None,
                    provider=k.view.provider,
                    location=location,
                    href=href,
                )
            )
    return {kind: tuple(items) for kind, items in sorted(groups.items())}


def _as_list(value: Any) -> Iterable[Any]:
    return value if isinstance(value, list) else []


def _where(
    plan: Plan, repos: Sequence[str], finding: Mapping[str, Any], links: _Links
) -> tuple[str | None, str | None]:
    file = finding.get("file")
    if not isinstance(file, str) or not file:
        return None, None
    line = finding.get("line")
    suffix = f":{line}" if isinstance(line, int) else ""
    repo = plan.repositories.get(repos[0]) if len(repos) == 1 else None
    base = (repo.path if repo else plan.root).resolve()
    target = Path(file) if Path(file).is_absolute() else base / file
    try:
        rel = target.resolve().relative_to(links.root).as_posix()
    except (ValueError, OSError):
        return f"{file}{suffix}", None  # outside the workspace: shown, not linked
    return f"{rel}{suffix}", links.href(rel)

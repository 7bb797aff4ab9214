"""One row per provider: from the recorded run, gate's receipts, or both.

Example::

    rows = provider_rows(plan, gate_result, record, refs, links)
    rows[0].verified     # "verified" | "not verified" | "stale" | "no receipt"
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from typing import Any

from changeloop import gate
from changeloop.model import Plan, Service
from changeloop.report.links import Links
from changeloop.report.model import Counts, ProviderRow
from changeloop.report.refs import STATUS_RANK, Refs, issuer
from changeloop.run import runlog
from changeloop.workspace.state import StateDir


def provider_rows(
    plan: Plan,
    result: gate.GateResult,
    record: Mapping[str, Any] | None,
    refs: Refs,
    links: Links,
) -> tuple[ProviderRow, ...]:
    """The run's providers first, then any only a kept or set-aside receipt names."""
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
        tests = next((counts(e.get("tests")) for e in exts if e.get("tests")), None)
        if any(r.code == "unverified" for r in aside):
            verified = "not verified"
            status = None if not kept else status
        elif aside and not kept:
            verified = "stale"
        elif kept:
            verified = "verified"
        else:
            verified = "no receipt"
        log = log_of(plan, record, name, links)
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
                state=state(run) if run else unrun_state(kept),
                status=status,
                duration_ms=duration if isinstance(duration, int) else None,
                tests=tests,
                findings=sum(len(e.get("findings") or []) for e in exts),
                log=log,
                log_href=links.href(log) if log else None,
                issuer=", ".join(sorted({issuer(e) for e in exts})) or None,
                verified=verified,  # type: ignore[arg-type]
                receipts=tuple(refs.kept[id(k)] for k in kept) + tuple(aside),
                services=tuple(
                    describe_service(plan.services[s])
                    for s in (planned.services if planned else ())
                    if s in plan.services
                ),
            )
        )
    return tuple(rows)


def describe_service(service: Service) -> str:
    """``web-dev: npm run dev -- --port 4173; ready when http://127.0.0.1:4173/ answers with
    body "profile-web" (30 s at most)`` — what started first, and how it was told ready."""
    text = f"{service.name}: {shlex.join(service.command)}"
    probe = service.readiness
    if probe is None:
        return f"{text}; no readiness probe"
    if probe.body is not None:
        expect = f'body "{probe.body}"'
    elif probe.body_regex is not None:
        expect = f"a body matching /{probe.body_regex}/"
    elif probe.header is not None:
        expect = f"header {probe.header[0]}: {probe.header[1]}"
    else:
        expect = "a response"
    limit = f"{probe.timeout_ms / 1000:g} s at most"
    return f"{text}; ready when {probe.url} answers with {expect} ({limit})"


def unrun_state(kept: Sequence[gate.Kept]) -> str:
    """A provider the recorded run does not list: its receipts were committed or imported."""
    if kept and all(k.envelope.source == "committed" for k in kept):
        return "committed"
    return "unknown"


def state(run: Mapping[str, Any]) -> str:
    """What the run did with the provider (``shared``: reused from a shared cache)."""
    if run.get("origin") == "shared":
        return "shared"
    return str(run.get("state") or "unknown")


def counts(tests: Any) -> Counts | None:
    """A receipt's ``tests`` counts, or None when they are not four integers."""
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


def log_of(plan: Plan, record: Mapping[str, Any] | None, name: str, links: Links) -> str | None:
    """The provider's last command log in the recorded run, relative to the workspace."""
    if not record:
        return None
    folder = StateDir(plan.root).runs / str(record.get("runId")) / name
    logs = sorted(folder.glob("*.log")) if folder.is_dir() else []
    if not logs:
        return None
    rel = logs[-1].resolve().relative_to(links.root).as_posix()
    return rel

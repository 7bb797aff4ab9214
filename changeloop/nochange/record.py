"""Writing the no-change record after a full run whose answer a cached re-prove repeats."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import secrets
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from changeloop import fsio
from changeloop.errors import FileRefused
from changeloop.git.repo import excludes_digest
from changeloop.masking import env_from_names
from changeloop.nochange.key import (
    RECORD_LIMIT,
    SCHEMA,
    base_key,
    env_from,
    environ_values,
    file_digest,
    option_key,
    part_digest,
    pass_env_patterns,
    record_path,
    secret_key,
    seed,
    stat_text,
)
from changeloop.nochange.placeholder import substitute
from changeloop.nochange.signed import seal_record
from changeloop.records import Observed, ProveResult
from changeloop.signing.jcs import canonicalize
from changeloop.stamps import utc_stamp

if TYPE_CHECKING:
    from changeloop.model import Plan
    from changeloop.records import ProveOptions, ProveResult


Render = Callable[["ProveResult"], tuple[dict[str, Any], str]]


def eligible_options(options: ProveOptions) -> bool:
    """Options under which a cached re-prove is answered from the record at all."""
    return (
        options.executor == "local"
        and options.sign_key is None
        and options.publish is None
        and options.cache_from is None
        and not options.own_trust
    )


def remember(
    plan: Plan,
    options: ProveOptions,
    result: ProveResult,
    *,
    config: Mapping[str, str | None],
    warnings: Sequence[str],
    render: Render,
) -> Path | None:
    """Write the change's record when this run's answer is one a cached re-prove repeats.

    ``render`` turns a result into (the ``--json`` document, the board text),
    exactly as the CLI prints them. Returns the record's path, or None when the
    run does not qualify (then any old record is removed: it no longer holds).
    """
    observed = result.observed
    if observed is None or observed.key is None:
        return None
    target = record_path(observed.state, plan.change.id)
    if target is None:
        return None
    doc = None
    if eligible_options(options) and not result.interrupted and not result.notes:
        doc = _record(plan, options, result, observed, config, warnings, render)
    if doc is None:
        _forget(target)
        return None
    envelope = seal_record(canonicalize(doc), seed(observed.key))
    if len(envelope) > RECORD_LIMIT:
        _forget(target)
        return None
    try:
        target.parent.mkdir(exist_ok=True)
        fsio.write_atomic(target, envelope, durable=False)  # a cache: a lost write is a miss
    except OSError:
        return None
    return target


def _forget(target: Path) -> None:
    try:
        if target.is_file() and not target.is_symlink():
            target.unlink()
    except OSError:
        pass


def _derivation_files(plan: Plan) -> dict[str, str | None] | None:
    """The digests of the files derivation could read, or None when it reads more.

    Detection for tests and browsers reads files outside the content tree (an
    installed ``node_modules/.bin`` tool, a ``.venv``); the record observes none of
    them, so a plan that leans on derived wiring is always planned afresh. Derived
    static analysis reads only a few top-level files (``derive.STATIC_ANALYSIS_FILES``),
    tracked, ignored or absent: the record keeps their digests, so a change that
    requires ``static-analysis`` and configures its provider can be answered too.
    """
    from changeloop.detect.derive import derivation_possible, static_analysis_files  # noqa: PLC0415 - kept off the no-change answer's imports

    if any(p.origin == "derived" for p in plan.providers.values()):
        return None
    if derivation_possible(plan.evidence, plan.execution, plan.repositories, static_analysis=False):
        return None
    return {
        str(path): file_digest(path)
        for path in static_analysis_files(plan.evidence, plan.repositories)
    }


def _record(  # noqa: PLR0917 (one caller, all of it needed)
    plan: Plan,
    options: ProveOptions,
    result: ProveResult,
    observed: Observed,
    config: Mapping[str, str | None],
    warnings: Sequence[str],
    render: Render,
) -> dict[str, Any] | None:
    """The record's document, or None when this run's answer is not one to repeat."""
    from changeloop.caching.local import NEVER_CACHED  # noqa: PLC0415 - kept off the no-change answer's imports

    derivation = _derivation_files(plan)
    if derivation is None or set(observed.trees) != set(plan.repositories):
        return None
    if any(p.adapter in NEVER_CACHED for p in plan.providers.values()):
        return None
    if set(result.providers) != set(plan.providers):
        return None  # a setup pseudo-provider ran: not what a cached re-prove shows
    cache_dir = observed.state / "cache"
    receipts: dict[str, list[tuple[str, bytes]]] = {}
    cache_stats: dict[str, str] = {}
    for name, report in result.providers.items():
        fp = observed.fingerprints.get(name)
        if fp is None or report.state not in ("ran", "cached") or not report.receipts:
            return None
        if report.state == "cached" and report.origin != "local":
            return None
        if any(entry.status != "pass" for entry in report.receipts):
            return None
        # The bytes this run wrote (a receipt it could not write was withdrawn by the run)
        files = [(Path(entry.path).name, entry.envelope) for entry in report.receipts]
        held = _cache_holds(cache_dir, fp, [data for _, data in files])
        if held is None:
            return None  # the cache does not hold exactly these: a re-prove would run it
        cache_stats[held[0]] = held[1]
        receipts[name] = files
    placeholder = f"@@run-{secrets.token_hex(8)}@@"
    cached = _cached_form(plan, result, receipts, placeholder)
    doc, board = render(cached)
    if all(r.state == "cached" for r in result.providers.values()):
        # Self-check: this run *was* a cached re-prove, so its own answer must be the one
        # recorded, bar the run id. Any difference means the cached form drifted.
        actual, _ = render(result)
        if substitute(doc, placeholder, result.run_id) != actual:
            return None

    names = env_from_names(plan)
    ports = _service_ports(plan)
    if len(observed.environments) != len(plan.providers) or observed.change_inputs is None:
        return None
    if set(observed.specs) != set(observed.environments):
        return None
    environments = sorted(
        {
            (
                json.dumps(list(cmd) if cmd is not None else None),
                str(where),
                part_digest(part),
                json.dumps(observed.specs[name]),
            )
            for name, (cmd, where, part) in observed.environments.items()
        }
    )
    patterns = pass_env_patterns(plan)
    secret = secret_key(seed(observed.key))
    inputs_digest, excluded = observed.change_inputs
    return {
        "schema": SCHEMA,
        "key": base_key(
            plan.root,
            plan.change.id,
            plan.change.path,
            option_key(
                sandbox=options.sandbox,
                issuer=options.issuer,
                url=options.url,
                fail_fast=options.fail_fast,
            ),
            config,
        ),
        "recordedOn": utc_stamp(datetime.now(UTC), timespec="seconds"),
        "repositories": {
            repo: {
                "path": str(plan.repositories[repo].path),
                "tree": tree,
                "symlinks": list(observed.symlinks.get(repo, ())),
                "gitlinks": observed.gitlinks.get(repo, True),
                "inputs": dict(sorted(observed.inputs.get(repo, {}).items())),
                "ignored": {
                    key: dict(found) for key, found in observed.ignored.get(repo, {}).items()
                },
                "excludes": excludes_digest(plan.repositories[repo].path),
            }
            for repo, tree in sorted(observed.trees.items())
        },
        "environment": [
            {
                "command": json.loads(cmd),
                "checkout": where,
                "part": digest,
                "passEnv": json.loads(spec)[0],
                "env": json.loads(spec)[1],
            }
            for cmd, where, digest, spec in environments
        ],
        "envFrom": env_from(names, secret, os.environ),
        "environ": {"passEnv": patterns, "values": environ_values(patterns, secret, os.environ)},
        "changeInputs": {"digest": inputs_digest, "excluded": list(excluded)},
        "derivation": derivation,
        "ports": ports,
        "cache": cache_stats,
        "answer": {
            "placeholder": placeholder,
            "archived": (
                str(plan.change.path.relative_to(plan.root)) if plan.change.archived else None
            ),
            "warnings": list(warnings),
            "proven": cached.verdict.proven,
            "json": doc,
            "board": board,
            "providers": [
                {
                    "name": p.name,
                    "adapter": p.adapter,
                    "repository": p.repository,
                    "dependsOn": list(p.depends_on),
                    "receipts": [
                        {"file": file, "sha256": hashlib.sha256(data).hexdigest()}
                        for file, data in receipts[p.name]
                    ],
                }
                for p in plan.providers.values()
            ],
        },
    }


def _cache_holds(cache_dir: Path, fp: str, envelopes: list[bytes]) -> tuple[str, str] | None:
    """The entry's name and status when ``fp``'s cache entry holds exactly ``envelopes``.

    One read: the status is the opened file's, so it names the bytes compared. An entry
    written the way this run's writer writes it is compared byte for byte; any other
    is decoded and compared envelope by envelope (the same answer, more work).
    """
    from changeloop.caching import local  # noqa: PLC0415 - kept off the no-change answer's imports

    if not envelopes:
        return None
    path = local.entry_path(cache_dir, fp)
    try:
        raw, info = fsio.read_regular_stat(
            path, limit=local.ENTRY_LIMIT, what="cache entry", follow_symlinks=False
        )
    except FileRefused:
        return None
    written = local.entry_of_passes(cache_dir, fp, envelopes)[1]
    if raw != written and local.reusable(local.decode(raw, fp)) != envelopes:
        return None
    return path.name, stat_text(info)  # of the file these bytes were read from


def _service_ports(plan: Plan) -> list[int]:
    """Ports of the services the providers use: a leftover server there is reported even
    when every provider is cached (run.provider_services.ports_taken), so the fast path
    checks them."""
    ports: set[int] = set()
    for provider in plan.providers.values():
        for name in provider.services:
            service = plan.services.get(name)
            port = service.readiness.port if service and service.readiness else None
            if port is not None:
                ports.add(port)
    return sorted(ports)


def _cached_form(
    plan: Plan,
    result: ProveResult,
    receipts: Mapping[str, Sequence[tuple[str, bytes]]],
    run_id: str,
) -> ProveResult:
    """The result a full re-prove with every provider reused from the cache would give.

    Built by the same function the run uses to reuse a cached pass
    (:func:`changeloop.run.seal.reused`); the verdict is decided again from those
    views (no notes: nothing failed to run). tests/nochange/test_nochange.py holds the two equal.
    """
    from changeloop.run.fold import views  # noqa: PLC0415 - kept off the no-change answer's imports
    from changeloop.run.seal import reused  # noqa: PLC0415 - kept off the no-change answer's imports
    from changeloop.verdict import decide  # noqa: PLC0415 - kept off the no-change answer's imports

    run_dir = plan.root / ".changeloop" / "runs" / run_id
    run_rel = run_dir.relative_to(plan.root).as_posix()
    providers = {}
    for provider in plan.providers.values():
        verified = []
        for _file, envelope in receipts[provider.name]:
            payload = base64.b64decode(json.loads(envelope)["payload"])
            verified.append((envelope, payload, json.loads(payload)["predicate"]["changeloop"]))
        providers[provider.name] = reused(provider, verified, origin="local", run_rel=run_rel)
    verdict = decide(plan, views(providers), {})
    # the same trust a full re-prove names
    return ProveResult(
        plan, run_id, run_dir, providers, verdict, masker=result.masker, trust=result.trust
    )


# -- reading it (before the plan is loaded) -------------------------------------------

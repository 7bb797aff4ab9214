"""The wiring digest: what a receipt says about *how* it was made (docs/threat-model.md).

The content identity leaves ``openspec/`` out, and the wiring lives there, so
content alone cannot bind a receipt to the commands that produced it. The
wiring digest is the sha256 of the RFC 8785 form of the provider's effective
wiring — its fingerprint document minus content identity and environment
values — so the same provider wired the same way has the same digest on every
machine (a CI receipt and a developer's plan agree), and a pull request that
rewires ``test`` as ``command: [true]`` gets another digest::

    wiring_digest(plan, plan.providers["test"])   # "sha256:3f2a…"

Left out on purpose: content (trees, inputs digests), environment values
(``envFrom`` and ``passEnv`` values, the resolved executable), and run options
that are not wiring (``--sandbox``, ``--issuer``, the change id — each bound
elsewhere).

Three things count that the provider's own keys do not say (docs/fingerprints.md):

- the *change inputs*: every file under ``openspec/`` a check may read
  (:mod:`~changeloop.fingerprints.change_inputs`);
- what it depends on: ``dependsOn`` maps each name to that provider's own wiring
  digest, so the digests form a Merkle DAG, as build systems key their actions
  (rewiring ``build`` changes the digest of ``test``, which runs what it made);
- the claim policy crediting reads, for every claim the provider can credit:
  ``archetype``, ``requires``, ``repository``, ``inputMode``, and the entry
  points of its repositories.
"""

from __future__ import annotations

import hashlib
import re
import weakref
from collections.abc import Sequence
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any

from changeloop.fingerprints.change_inputs import change_inputs_digest
from changeloop.model import Plan, Provider, Readiness, Service
from changeloop.signing.jcs import canonicalize

__all__ = [
    "FORMAT",
    "change_inputs_of",
    "claim_policy",
    "receipts_locations",
    "wiring_digest",
    "wiring_document",
]

# Bump when the meaning of the document changes: every receipt's digest moves.
# 2: change inputs, dependencies by their digests, the claim policy, passEnv, artifacts.
FORMAT = 2

_PYTHON = re.compile(r"^python(3(\.\d+)?)?(\.exe)?$")


def _machine_independent(provider: Provider, argv: Sequence[str] | None) -> list[str] | None:
    """Derived wiring in the form every machine derives: the interpreter is ``python``.

    Derived wiring resolves the repository's interpreter (``.venv/bin/python``
    here, ``python3`` there) when it runs; which one ran belongs to the
    fingerprint's environment part, not to the wiring. Configured commands are
    kept exactly as written.
    """
    if argv is None:
        return None
    out = list(argv)
    if provider.origin == "derived" and out:
        head = out[0].replace("\\", "/")
        name = PurePosixPath(head).name or PureWindowsPath(out[0]).name
        if _PYTHON.match(name):
            out[0] = "python"
    return out


def _readiness(r: Readiness | None) -> dict[str, Any] | None:
    if r is None:
        return None
    return {
        "url": r.url,
        "body": r.body,
        "bodyRegex": r.body_regex,
        "header": list(r.header) if r.header else None,
        "timeoutMs": r.timeout_ms,
    }


def service_wiring(s: Service) -> dict[str, Any]:
    """A service as it counts in wiring and fingerprints (the port is in its readiness URL)."""
    return {
        "name": s.name,
        "repository": s.repository,
        "command": list(s.command),
        "readiness": _readiness(s.readiness),
        "env": dict(s.env),
        "envFrom": sorted(s.env_from),
        "passEnv": sorted(s.pass_env),
    }


def wiring_document(plan: Plan, provider: Provider) -> dict[str, Any]:
    """The JSON document :func:`wiring_digest` hashes (exposed for tests and docs)."""
    return _document(plan, provider, _memo(plan), ())


def _document(plan: Plan, provider: Provider, memo: _Memo, path: tuple[str, ...]) -> dict[str, Any]:
    facts = provider.facts
    if facts is not None:
        command = facts.command
        adapter_inputs = dict(facts.inputs)
        capabilities = list(facts.capabilities)
        repos = facts.repositories
    else:  # an unknown adapter never runs (preflight); its digest still must not crash
        command, adapter_inputs, capabilities = provider.command, {}, [provider.capability]
        repos = (provider.repository,) if provider.repository else ()
    services = sorted(
        (plan.services[s] for s in provider.services if s in plan.services),
        key=lambda s: s.name,
    )
    setup = {
        repo: [list(argv) for argv in plan.repositories[repo].setup]
        for repo in repos
        if repo in plan.repositories
    }
    return {
        "version": FORMAT,
        "adapter": provider.adapter,
        "capability": provider.capability,
        "capabilities": capabilities,
        "repository": provider.repository,
        "command": _machine_independent(provider, command),
        "adapterInputs": adapter_inputs,
        "report": provider.report,
        "reportFormat": provider.format,
        "minimum": provider.minimum,
        "discoveryProvider": provider.discovery_provider,
        "project": provider.project,
        "outputs": list(provider.outputs),
        "inputMode": provider.input_mode,
        "allowFlaky": provider.allow_flaky,
        "envelope": provider.envelope,
        "contract": dict(sorted(provider.contract.items())),
        "claims": sorted(provider.claims),
        "accepts": sorted(provider.accepts),
        "env": dict(provider.env),
        "envFrom": sorted(provider.env_from),
        "passEnv": sorted(provider.pass_env),
        "timeoutMs": provider.timeout_ms,
        "inputs": sorted(provider.inputs),
        "artifacts": sorted(provider.artifacts),
        "resources": sorted(provider.resources),
        "dependsOn": {
            name: _upstream(plan, name, memo, (*path, provider.name))
            for name in sorted(provider.depends_on)
        },
        "services": [service_wiring(s) for s in services],
        "setup": setup,
        "claimPolicy": claim_policy(plan, provider, capabilities, repos),
        "changeInputs": memo.change_inputs(plan),
        # only when set, so every provider without one keeps its digest
        **({"workdir": provider.workdir} if provider.workdir else {}),
    }


def wiring_digest(plan: Plan, provider: Provider) -> str:
    """``"sha256:<hex>"`` of the RFC 8785 form of :func:`wiring_document`."""
    return _digest(plan, provider, _memo(plan), ())


def _digest(plan: Plan, provider: Provider, memo: _Memo, path: tuple[str, ...]) -> str:
    planned = plan.providers.get(provider.name) is provider
    if planned and provider.name in memo.digests:
        return memo.digests[provider.name]
    doc = _document(plan, provider, memo, path)
    digest = "sha256:" + hashlib.sha256(canonicalize(doc)).hexdigest()
    if planned:
        memo.digests[provider.name] = digest
    return digest


def _upstream(plan: Plan, name: str, memo: _Memo, path: tuple[str, ...]) -> str | None:
    """The wiring digest of dependency ``name``; None when the plan has no such provider or
    it closes a cycle (both refused by preflight: the digest must still not loop)."""
    found = plan.providers.get(name)
    if found is None or name in path:
        return None
    return _digest(plan, found, memo, path)


def claim_policy(
    plan: Plan, provider: Provider, capabilities: Sequence[str], repos: Sequence[str]
) -> dict[str, Any]:
    """What crediting reads of each claim this provider can credit: those it lists, and
    those requiring one of its capabilities in a repository it covers (or anywhere), plus
    the entry points of its repositories (grounding reads them)."""
    claims = {}
    for cid, claim in sorted(plan.evidence.claims.items()):
        scoped = claim.repository is None or not repos or claim.repository in repos
        if cid in provider.claims or (scoped and set(claim.requires) & set(capabilities)):
            claims[cid] = {
                "archetype": claim.archetype,
                "requires": sorted(claim.requires),
                "repository": claim.repository,
                "inputMode": claim.input_mode,
            }
    entry_points = {
        repo: sorted(plan.repositories[repo].entry_points)
        for repo in repos
        if repo in plan.repositories and plan.repositories[repo].entry_points
    }
    return {"claims": claims, "entryPoints": entry_points}


class _Memo:
    """What one plan's digests share: the change inputs (one listing of ``openspec/``)
    and each planned provider's digest (a dependency is asked once, not once per user)."""

    def __init__(self) -> None:
        self.digests: dict[str, str] = {}
        self._inputs: str | None = None

    def change_inputs(self, plan: Plan) -> str:
        if self._inputs is None:
            self._inputs = change_inputs_digest(
                plan.root, plan.change.path, receipts_locations(plan)
            )
        return self._inputs


# A plan is frozen: its memo lives as long as it does (keyed by identity, never reused).
_MEMOS: dict[int, tuple[weakref.ref[Plan], _Memo]] = {}


def _memo(plan: Plan) -> _Memo:
    key = id(plan)
    found = _MEMOS.get(key)
    if found is not None and found[0]() is plan:
        return found[1]
    memo = _Memo()

    def forget(_ref: weakref.ref[Plan]) -> None:
        _MEMOS.pop(key, None)

    _MEMOS[key] = (weakref.ref(plan, forget), memo)
    return memo


def change_inputs_of(plan: Plan) -> tuple[str, tuple[str, ...]]:
    """The plan's change inputs digest (as its wiring digests hold it) and the paths left
    out of it besides the fixed rules, for the no-change record to check again."""
    excluded = tuple(str(p) for p in receipts_locations(plan))
    return _memo(plan).change_inputs(plan), excluded


def receipts_locations(plan: Plan) -> list[Path]:
    """Where evidence made elsewhere arrives: each ``external`` provider's ``receipts:``."""
    return [plan.root / p.receipts for p in plan.providers.values() if p.receipts]

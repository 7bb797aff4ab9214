"""The wiring digest: what a receipt says about *how* it was made (DESIGN.md §2.6, §13).

The content identity leaves ``openspec/`` out, and the wiring lives there, so
content alone cannot bind a receipt to the commands that produced it. The
wiring digest is the sha256 of the RFC 8785 form of the provider's effective
wiring — its fingerprint document minus content identity and environment
values — so the same provider wired the same way has the same digest on every
machine (a CI receipt and a developer's plan agree), and a pull request that
rewires ``test`` as ``command: [true]`` gets another digest::

    wiring_digest(plan, plan.providers["test"])   # "sha256:3f2a…"

Left out on purpose: content (trees, inputs digests), environment values
(``envFrom`` values, the resolved executable), and run options that are not
wiring (``--sandbox``, ``--issuer``, the change id — each bound elsewhere).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from pathlib import PurePosixPath, PureWindowsPath
from typing import Any

from changeloop.model import Plan, Provider, Readiness, Service
from changeloop.signing.jcs import canonicalize

__all__ = ["FORMAT", "wiring_digest", "wiring_document"]

# Bump when the meaning of the document changes: every receipt's digest moves.
FORMAT = 1

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
    }


def wiring_document(plan: Plan, provider: Provider) -> dict[str, Any]:
    """The JSON document :func:`wiring_digest` hashes (exposed for tests and docs)."""
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
        "timeoutMs": provider.timeout_ms,
        "inputs": sorted(provider.inputs),
        "resources": sorted(provider.resources),
        "dependsOn": sorted(provider.depends_on),
        "services": [service_wiring(s) for s in services],
        "setup": setup,
        # only when set, so every provider without one keeps its digest
        **({"workdir": provider.workdir} if provider.workdir else {}),
    }


def wiring_digest(plan: Plan, provider: Provider) -> str:
    """``"sha256:<hex>"`` of the RFC 8785 form of :func:`wiring_document`."""
    return "sha256:" + hashlib.sha256(canonicalize(wiring_document(plan, provider))).hexdigest()

"""The ``contract-digest`` adapter: the same contract file, byte for byte, in every repository.

It executes nothing. For each ``repository: path`` of ``contract`` it hashes the
file's bytes (no newline or encoding normalisation: CRLF and LF differ, on
purpose — a consumer reads bytes) in that repository's working directory, and
passes only when every digest agrees. A missing file, a directory, or a path
escaping its repository (``..``, absolute — refused in preflight — or a
symlink resolving outside, seen only now) is a ``fail`` naming it. The receipt's
``details`` carry ``{repo: {path, sha256}}`` for every file that could be read.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from changeloop.errors import FileRefused, Problem
from changeloop.fsio import MIB, read_regular
from changeloop.model import ADAPTER_CAPABILITIES, Plan, Provider
from changeloop.outcome import Finding, Observer, Outcome
from changeloop.providers.base import RunContext, escape_reason, reads_nothing, runs_itself

NAME = "contract-digest"
DEFAULT_CAPABILITY = ADAPTER_CAPABILITIES[NAME]
prepare, read = runs_itself, reads_nothing  # the work is in run()
RUNS_COMMAND = False
CONTRACT_LIMIT = 64 * MIB  # a contract (schema, OpenAPI document) is far smaller


def default_resources(provider: Provider, plan: Plan) -> tuple[str, ...]:
    return tuple(f"workspace-read:{repo}" for repo in repositories(provider, plan))


def repositories(provider: Provider, plan: Plan) -> tuple[str, ...]:
    return tuple(sorted(provider.contract))


def capabilities(provider: Provider) -> tuple[str, ...]:
    return (provider.capability,)


def effective_command(provider: Provider) -> tuple[str, ...] | None:
    return None


def fingerprint_inputs(provider: Provider) -> Mapping[str, Any]:
    return {"contract": dict(sorted(provider.contract.items()))}


def static_escape(path: str) -> str | None:
    """Why ``path`` escapes its repository on paper, or None (``base.escape_reason``)."""
    return "is empty" if not path else escape_reason(path)


def preflight(provider: Provider, plan: Plan) -> Sequence[Problem]:
    problems: list[Problem] = []
    count = len(provider.contract)
    if count < 2:
        problems.append(
            Problem(
                code="contract_needs_two",
                message=(
                    f"contract-digest provider {provider.name!r} names"
                    f" {count} repositor{'y' if count == 1 else 'ies'};"
                    " it compares a file across two or more"
                ),
                location=provider.location,
                fix="list the file in each repository: contract: {api: path, web: path}",
                providers=(provider.name,),
            )
        )
    for repo, path in sorted(provider.contract.items()):
        if repo not in plan.repositories:
            problems.append(
                Problem(
                    code="contract_unknown_repository",
                    message=(
                        f"contract-digest provider {provider.name!r} names repository {repo!r},"
                        f" which evidence.yaml does not declare"
                        f" (declared: {', '.join(sorted(plan.repositories))})"
                    ),
                    location=provider.location,
                    fix="use a repository name from evidence.yaml `repositories:`",
                    providers=(provider.name,),
                )
            )
        why = static_escape(path)
        if why is not None:
            problems.append(
                Problem(
                    code="path_escape",
                    message=(
                        f"contract path {path!r} of repository {repo!r} in provider"
                        f" {provider.name!r} {why}; it must stay inside its repository"
                    ),
                    location=provider.location,
                    fix="give a path relative to the repository root, without '..'",
                    providers=(provider.name,),
                )
            )
    return problems


def digest_file(base: Path, path: str) -> tuple[str | None, str | None]:
    """(sha256 hex, None) or (None, why the file cannot be the contract)."""
    why = static_escape(path)
    if why is not None:
        return None, f"the path {why}"
    candidate = base / path
    try:
        resolved = candidate.resolve(strict=True)
    except FileNotFoundError:
        return None, "is missing"
    except (OSError, RuntimeError) as exc:  # symlink loop, permission
        return None, f"cannot be resolved ({exc})"
    if not resolved.is_relative_to(base.resolve()):
        return None, f"is a symlink pointing outside the repository (to {resolved})"
    if resolved.is_dir():
        return None, "is a directory, not a file"
    try:
        data = read_regular(resolved, limit=CONTRACT_LIMIT, what="contract file")
    except FileRefused as exc:
        return None, exc.reason
    return hashlib.sha256(data).hexdigest(), None


async def run(ctx: RunContext) -> list[Outcome]:
    provider = ctx.provider
    details: dict[str, dict[str, str]] = {}
    findings: list[Finding] = []
    for repo, path in sorted(provider.contract.items()):
        base = ctx.workdirs.get(repo)
        if base is None:
            findings.append(Finding("contract-missing", f"{repo}: repository has no checkout"))
            continue
        digest, why = digest_file(base, path)
        if digest is None:
            findings.append(
                Finding("contract-unreadable", f"{repo}:{path} {why}", severity="error", file=path)
            )
        else:
            details[repo] = {"path": path, "sha256": digest}
    observer = Observer(adapter=NAME)
    if findings:
        reason = "; ".join(f.message for f in findings)
        return [
            Outcome(
                capability=provider.capability,
                status="fail",
                reason=f"contract file cannot be compared: {reason}",
                findings=tuple(findings),
                details=details,
                observer=observer,
            )
        ]
    digests = {d["sha256"] for d in details.values()}
    if len(digests) > 1:
        shown = ", ".join(
            f"{repo}:{d['path']} sha256 {d['sha256'][:12]}…" for repo, d in sorted(details.items())
        )
        return [
            Outcome(
                capability=provider.capability,
                status="fail",
                reason=f"contract copies differ: {shown}",
                findings=(Finding("contract-drift", f"contract copies differ: {shown}", "error"),),
                details=details,
                observer=observer,
            )
        ]
    return [
        Outcome(
            capability=provider.capability,
            status="pass",
            claims={c: "credited" for c in provider.claims},
            details=details,
            observer=observer,
        )
    ]


def missing_reason(ctx: RunContext) -> str | None:
    """Never asked: this adapter issues a receipt for every capability it runs."""
    return None

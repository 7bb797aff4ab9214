"""The ``external`` adapter: accept a signed receipt from a system changeloop does not run.

It executes nothing. It reads DSSE envelopes from the *workspace* (never a
sandbox): ``openspec/changes/<id>/receipts/*.json`` — plain files, so they are
committed and archived with the change — or the provider's ``receipts:`` path
(relative to the workspace root; a file or a directory). Each envelope goes
through the whole verification order (``changeloop.signing.verify``) against the keys
the provider names (``ci: {issuer, publicKey}`` / ``authority: {name,
publicKey}``), bound to this change, the current content identity of every
repository of the provider, the provider's ``claims`` and the issuer.

Outcomes:
- no envelope at all → ``run`` returns ``[]`` (no receipt; the claims stay
  ``unproven``); :func:`missing_reason` says why, for the board;
- a valid receipt for this content whose result is not PASSED → that status
  (a ``FAILED`` one for the current content wins over any ``PASSED`` one);
- else a valid PASSED one → ``pass``, crediting the provider's ``claims``;
- else (envelopes present, none valid) → ``fail`` naming, per file, the first
  check that failed.

This module is the adapter's interface (where the envelopes are, preflight, the
fingerprint); :mod:`~changeloop.providers.external_check` judges one envelope
file on its own and :mod:`~changeloop.providers.external_judge` chooses the
outcome from all of them (pure).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from changeloop.errors import Problem
from changeloop.model import ADAPTER_CAPABILITIES, Plan, Provider
from changeloop.outcome import Outcome
from changeloop.providers.base import RunContext, reads_nothing, runs_itself
from changeloop.providers.external_check import ADAPTER, bound_repositories, check_file
from changeloop.providers.external_judge import display, fail, judge
from changeloop.signing.keys import KeyRefused, load_public_key
from changeloop.signing.verify import Trusted

NAME = ADAPTER
DEFAULT_CAPABILITY = ADAPTER_CAPABILITIES[NAME]
prepare, read = runs_itself, reads_nothing  # the work is in run()
RUNS_COMMAND = False


def default_resources(provider: Provider, plan: Plan) -> tuple[str, ...]:
    # It reads only the change directory, but binds to each repository's content.
    return tuple(f"workspace-read:{repo}" for repo in repositories(provider, plan))


repositories = bound_repositories


def capabilities(provider: Provider) -> tuple[str, ...]:
    return (provider.capability,)


def effective_command(provider: Provider) -> tuple[str, ...] | None:
    return None


def fingerprint_inputs(provider: Provider) -> Mapping[str, Any]:
    # The receipts themselves are read on every run (never cached: new ones may
    # arrive without any wiring change), but key and binding changes count.
    return {
        "claims": sorted(provider.claims),
        "issuer": provider.issuer,
        "receipts": provider.receipts,
        "maxAge": provider.max_age_s,
        "keys": sorted((k.role, k.name, k.public_key_pem.strip()) for k in provider.trusted_keys),
    }


def preflight(provider: Provider, plan: Plan) -> Sequence[Problem]:
    problems: list[Problem] = []
    if not provider.trusted_keys:
        problems.append(
            Problem(
                code="external_no_key",
                message=f"external provider {provider.name!r} names no key to trust",
                location=provider.location,
                fix="add ci: {issuer: NAME, publicKey: PEM} or authority: {name, publicKey}",
                providers=(provider.name,),
            )
        )
    for trusted in provider.trusted_keys:
        try:
            load_public_key(trusted.public_key_pem, trusted.source)
        except KeyRefused as exc:
            problems.extend(
                Problem(
                    code=p.code,
                    message=f"provider {provider.name!r}: {p.message}",
                    location=provider.location or p.location,
                    fix=p.fix,
                    providers=(provider.name,),
                )
                for p in exc.problems
            )
    return problems


def receipts_location(provider: Provider, plan: Plan) -> Path:
    if provider.receipts:
        return plan.root / provider.receipts
    return plan.change.path / "receipts"


def envelope_files(provider: Provider, plan: Plan) -> list[Path]:
    where = receipts_location(provider, plan)
    if where.is_file():
        return [where]
    if where.is_dir():
        return sorted(p for p in where.glob("*.json") if p.is_file())
    return []


def missing_reason(ctx: RunContext) -> str | None:
    """Why there is no receipt (``run`` returned ``[]``), or None when envelopes exist."""
    where = display(receipts_location(ctx.provider, ctx.plan), ctx.plan.root)
    files = envelope_files(ctx.provider, ctx.plan)
    if files:
        provider = ctx.provider
        accepts = ", ".join(provider.accepts) or "none"
        return (
            f"none of the {len(files)} envelope(s) in {where} is addressed to provider"
            f" {provider.name!r}: it accepts sign-offs for capability {provider.capability!r}"
            f" and receipts made by `prove` for the providers in its accepts ({accepts});"
            " the others speak for other providers or capabilities"
        )
    return (
        f"no external receipt was supplied: {where} holds no *.json envelope; add one with"
        f" `changeloop receipt import FILE --change {ctx.plan.change.id}` or"
        f" `changeloop receipt sign --change {ctx.plan.change.id} …`"
    )


async def run(ctx: RunContext) -> list[Outcome]:
    """Each envelope judged on its own (``external_check``), then chosen (``external_judge``)."""
    provider, plan = ctx.provider, ctx.plan
    files = envelope_files(provider, plan)
    if not files:
        return []
    try:
        keys = _trusted(provider)
        others = [
            t
            for p in plan.providers.values()
            if p.adapter == NAME
            and p.name != provider.name
            and receipts_location(p, plan) == receipts_location(provider, plan)
            for t in _trusted(p)
        ]
    except KeyRefused as exc:
        return [fail(provider.capability, exc.reason, ())]
    return judge(provider, plan.root, [check_file(path, ctx, keys, others) for path in files])


def _trusted(provider: Provider) -> list[Trusted]:
    return [
        Trusted(load_public_key(k.public_key_pem, k.source), issuer=k.name)
        for k in provider.trusted_keys
    ]

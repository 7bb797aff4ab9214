"""One envelope file, judged on its own for an ``external`` provider: never an exception.

Example::

    judged = check_file(path, ctx, keys, others)
    judged.kind    # "valid" | "invalid" (a check failed) | "ignored" (not addressed to
                   # this provider) | "broken" (cannot be parsed or verified at all)
    judged.check   # the first check that failed, e.g. "wiring", "subject", "signature"

Order: the signature (against this provider's keys; another external provider's
key makes it ``ignored``), the receipt schema, who made it — a ``receipt sign``
sign-off for this capability, or a ``prove`` receipt of a provider in ``accepts``
whose wiring digest equals this checkout's — then the full verification bound to
the change, the current content of every repository involved, the claims, the
issuer and ``maxAge`` (docs/adapters). Choosing among the files is
:mod:`changeloop.providers.external_judge`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Literal

from changeloop.errors import ChangeloopError
from changeloop.fingerprints.wiring import wiring_digest
from changeloop.git.identity import content_identity
from changeloop.model import Plan, Provider
from changeloop.providers.base import RunContext
from changeloop.signing.dsse import (
    VerificationError,
    parse_envelope,
    read_envelope,
    verify_signatures,
)
from changeloop.signing.statement import EXTENSION_SCHEMA as RECEIPT_SCHEMA
from changeloop.signing.statement import SIGNED_ADAPTER
from changeloop.signing.verify import Expectation, Trusted, Verified, verify_envelope

ADAPTER = "external"
Kind = Literal["broken", "ignored", "invalid", "valid"]

# The first pass checks signature and shape only: no envelope is too old for that.
_FOREVER = timedelta(days=365 * 1000)


@dataclass(frozen=True)
class Judged:
    """One envelope file as this provider judged it, on its own."""

    path: Path
    kind: Kind
    verified: Verified | None = None
    check: str | None = None
    reason: str | None = None


def check_file(path: Path, ctx: RunContext, keys: list[Trusted], others: list[Trusted]) -> Judged:
    """Judge one envelope; whatever it holds, the answer is a record, never an exception."""
    try:
        data = read_envelope(path)  # bounded, and a FIFO is refused, never waited on
        return _route(path, data, ctx, keys, others)
    except OSError as exc:
        return Judged(path, "broken", check="json", reason=f"cannot read: {exc.strerror}")
    except VerificationError as exc:
        return Judged(path, "broken", check=exc.check, reason=exc.reason)
    except ChangeloopError as exc:
        reason = "; ".join(p.message for p in exc.problems)
        return Judged(path, "broken", check="json", reason=reason)
    except (RecursionError, MemoryError, ValueError, TypeError, KeyError) as exc:
        return Judged(
            path, "broken", check="json", reason=f"not a receipt envelope ({type(exc).__name__})"
        )


def _route(
    path: Path, data: bytes, ctx: RunContext, keys: list[Trusted], others: list[Trusted]
) -> Judged:
    provider, plan = ctx.provider, ctx.plan
    try:
        # Signature, payloadType and the statement's shape; no binding yet.
        base = verify_envelope(data, keys, Expectation(now=ctx.now, skew=_FOREVER))
    except VerificationError as exc:
        if exc.check in ("signature", "keyid") and others and _verifies(data, others):
            return Judged(path, "ignored")  # another external provider's key signed it
        raise
    ext = base.extension
    made_by = str(ext["provider"])
    cap = str(ext["capability"])
    claims = ext.get("claims") or {}
    speaks_for_mine = cap == provider.capability or any(c in claims for c in provider.claims)
    if ext["schema"] != RECEIPT_SCHEMA:
        if not (speaks_for_mine or made_by in provider.accepts):
            return Judged(path, "ignored")
        return Judged(
            path,
            "invalid",
            check="wiring",
            reason=f"receipt from provider {made_by!r} is {ext['schema']}, made before receipts"
            " carried a wiring digest (predicate.changeloop.wiring); external accepts only"
            f" {RECEIPT_SCHEMA} receipts — "
            + (
                "sign it again with `changeloop receipt sign`"
                if ext["adapter"] in (SIGNED_ADAPTER, "receipt-sign")
                else "prove it again with this changeloop"
            ),
        )
    trees_of = bound_repositories(provider, plan)
    if ext["adapter"] == SIGNED_ADAPTER:
        if cap != provider.capability:
            return Judged(path, "ignored")  # a sign-off for another capability
    elif made_by in provider.accepts:
        target = plan.providers.get(made_by)
        if target is None or target.adapter == ADAPTER:
            return Judged(
                path,
                "invalid",
                check="wiring",
                reason=f"receipt was made by provider {made_by!r}, and this checkout's plan holds"
                f" no provider {made_by!r} (configured or derived, not external) whose wiring it"
                " could match; wire it here, or drop it from accepts",
            )
        if cap != target.capability:
            return Judged(path, "ignored")  # e.g. the discovery receipt of an accepted `test`
        mine = wiring_digest(plan, target)
        if ext.get("wiring") != mine:
            return Judged(
                path,
                "invalid",
                check="wiring",
                reason=f"receipt was made by provider {made_by!r} wired as"
                f" {short_digest(ext.get('wiring'))}, this checkout wires {made_by!r} as"
                f" {short_digest(mine)}; a receipt speaks only for the wiring that made it"
                f" (did execution.yaml change how {made_by} runs?) — prove again with this"
                " checkout's wiring",
            )
        trees_of = target.facts.repositories if target.facts is not None else ()
    elif speaks_for_mine:
        accepts = ", ".join(provider.accepts) or "none"
        return Judged(
            path,
            "invalid",
            check="wiring",
            reason=f"receipt was made by `prove` for provider {made_by!r}, which provider"
            f" {provider.name!r} does not accept (accepts: {accepts}); a prove-made receipt is"
            " accepted only from a provider listed in accepts whose wiring digest matches this"
            " checkout's",
        )
    else:
        return Judged(path, "ignored")  # addressed to another provider
    expect = Expectation(
        change=plan.change.id,
        trees={repo: ctx.identities[repo].tree for repo in trees_of}
        if all(repo in ctx.identities for repo in trees_of)
        else _trees(ctx, trees_of),
        claims=tuple(provider.claims),
        issuer=provider.issuer,
        now=ctx.now,
        max_age_s=provider.max_age_s,
    )
    try:
        verified = verify_envelope(data, keys, expect)
    except VerificationError as exc:
        return Judged(path, "invalid", check=exc.check, reason=exc.reason)
    return Judged(path, "valid", verified=verified)


def bound_repositories(provider: Provider, plan: Plan) -> tuple[str, ...]:
    """What an external receipt binds to: the provider's repository when named, else all."""
    if provider.repository:
        return (provider.repository,)
    return tuple(sorted(plan.repositories))


def short_digest(value: object) -> str:
    """A wiring digest short enough for a message (its algorithm and first hex digits)."""
    if not isinstance(value, str) or not value:
        return "(no wiring digest)"
    return value[:19] + "…"


def _verifies(data: bytes, keys: list[Trusted]) -> bool:
    try:
        verify_signatures(parse_envelope(data), [t.key for t in keys])
    except (ChangeloopError, RecursionError, ValueError, TypeError):
        return False
    return True


def _trees(ctx: RunContext, repos: Sequence[str]) -> dict[str, str]:
    """Current content of repositories beyond this provider's own (an accepted provider's)."""
    out: dict[str, str] = {}
    for repo in repos:
        ident = ctx.identities.get(repo)
        if ident is None:
            ident = content_identity(ctx.plan.repositories[repo].path, include_untracked=True)
        out[repo] = ident.tree
    return out

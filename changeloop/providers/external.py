"""The ``external`` adapter: accept a signed receipt from a system changeloop does not run.

It executes nothing. It reads DSSE envelopes from the *workspace* (never a
sandbox): ``openspec/changes/<id>/receipts/*.json`` — plain files, so they are
committed and archived with the change — or the provider's ``receipts:`` path
(relative to the workspace root; a file or a directory). Each envelope goes
through the whole verification order (``changeloop.verify``) against the keys
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
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any, Literal

from changeloop.dsse import VerificationError, parse_envelope, read_envelope, verify_signatures
from changeloop.errors import ChangeloopError, Problem
from changeloop.keys import KeyRefused, load_public_key
from changeloop.model import ClaimMark, Plan, Provider, Status
from changeloop.providers.base import Finding, Observer, Outcome, RunContext
from changeloop.receipts import EXTENSION_SCHEMA as RECEIPT_SCHEMA
from changeloop.receipts import SIGNED_ADAPTER
from changeloop.verify import Expectation, Trusted, Verified, verify_envelope
from changeloop.wiring import wiring_digest

NAME = "external"
DEFAULT_CAPABILITY = "review"
RUNS_COMMAND = False


def default_resources(provider: Provider, plan: Plan) -> tuple[str, ...]:
    # It reads only the change directory, but binds to each repository's content.
    return tuple(f"workspace-read:{repo}" for repo in repositories(provider, plan))


def repositories(provider: Provider, plan: Plan) -> tuple[str, ...]:
    """Its own repository when named, else every repository of the change."""
    if provider.repository:
        return (provider.repository,)
    return tuple(sorted(plan.repositories))


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
    where = _display(receipts_location(ctx.provider, ctx.plan), ctx.plan.root)
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


Kind = Literal["broken", "ignored", "invalid", "valid"]


@dataclass(frozen=True)
class _Judged:
    """One envelope file as this provider judged it, on its own."""

    path: Path
    kind: Kind
    verified: Verified | None = None
    check: str | None = None
    reason: str | None = None


async def run(ctx: RunContext) -> list[Outcome]:
    provider, plan = ctx.provider, ctx.plan
    files = envelope_files(provider, plan)
    if not files:
        return []
    capability = provider.capability
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
        return [_fail(capability, exc.reason, ())]
    judged = [_judge(path, ctx, keys, others) for path in files]
    broken = [j for j in judged if j.kind == "broken"]
    invalid = [j for j in judged if j.kind == "invalid"]
    valid = [j for j in judged if j.kind == "valid" and j.verified is not None]
    root = plan.root
    if broken:
        # Fail closed: a file nobody can parse or verify may be the receipt that says FAILED.
        findings = tuple(_finding(j, root) for j in (*broken, *invalid))
        reasons = "; ".join(_why(j, root) for j in broken)
        return [
            _fail(
                capability,
                f"receipt envelope(s) that cannot be parsed or verified fail closed — {reasons}",
                findings,
            )
        ]
    # A valid non-PASSED receipt for this content wins over any PASSED one.
    losing = [j for j in valid if j.verified is not None and j.verified.status != "pass"]
    chosen = losing[0] if losing else (valid[0] if valid else None)
    if chosen is not None and chosen.verified is not None:
        return [_from_verified(ctx, chosen.path, chosen.verified)]
    if not invalid:
        return []  # nothing addressed to this provider: no receipt, claims stay unproven
    findings = tuple(_finding(j, root) for j in invalid)
    reasons = "; ".join(_why(j, root) for j in invalid)
    return [_fail(capability, f"no valid receipt for this content — {reasons}", findings)]


def _trusted(provider: Provider) -> list[Trusted]:
    return [
        Trusted(load_public_key(k.public_key_pem, k.source), issuer=k.name)
        for k in provider.trusted_keys
    ]


def _finding(j: _Judged, root: Path) -> Finding:
    return Finding(
        kind=f"receipt-{(j.check or 'rejected').lower()}",
        message=j.reason or "rejected",
        severity="error",
        file=_display(j.path, root),
    )


def _why(j: _Judged, root: Path) -> str:
    return f"{_display(j.path, root)}: {j.check} check failed: {j.reason}"


def _judge(path: Path, ctx: RunContext, keys: list[Trusted], others: list[Trusted]) -> _Judged:
    """Judge one envelope; whatever it holds, the answer is a record, never an exception."""
    try:
        data = read_envelope(path)  # bounded, and a FIFO is refused, never waited on
        return _route(path, data, ctx, keys, others)
    except OSError as exc:
        return _Judged(path, "broken", check="json", reason=f"cannot read: {exc.strerror}")
    except VerificationError as exc:
        return _Judged(path, "broken", check=exc.check, reason=exc.reason)
    except ChangeloopError as exc:
        reason = "; ".join(p.message for p in exc.problems)
        return _Judged(path, "broken", check="json", reason=reason)
    except (RecursionError, MemoryError, ValueError, TypeError, KeyError) as exc:
        return _Judged(
            path, "broken", check="json", reason=f"not a receipt envelope ({type(exc).__name__})"
        )


def _route(
    path: Path, data: bytes, ctx: RunContext, keys: list[Trusted], others: list[Trusted]
) -> _Judged:
    provider, plan = ctx.provider, ctx.plan
    try:
        # Signature, payloadType and the statement's shape; no binding yet.
        base = verify_envelope(data, keys, Expectation(now=ctx.now, skew=_FOREVER))
    except VerificationError as exc:
        if exc.check in ("signature", "keyid") and others and _verifies(data, others):
            return _Judged(path, "ignored")  # another external provider's key signed it
        raise
    ext = base.extension
    made_by = str(ext["provider"])
    cap = str(ext["capability"])
    claims = ext.get("claims") or {}
    speaks_for_mine = cap == provider.capability or any(c in claims for c in provider.claims)
    if ext["schema"] != RECEIPT_SCHEMA:
        if not (speaks_for_mine or made_by in provider.accepts):
            return _Judged(path, "ignored")
        return _Judged(
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
    trees_of = repositories(provider, plan)
    if ext["adapter"] == SIGNED_ADAPTER:
        if cap != provider.capability:
            return _Judged(path, "ignored")  # a sign-off for another capability
    elif made_by in provider.accepts:
        target = plan.providers.get(made_by)
        if target is None or target.adapter == NAME:
            return _Judged(
                path,
                "invalid",
                check="wiring",
                reason=f"receipt was made by provider {made_by!r}, and this checkout's plan holds"
                f" no provider {made_by!r} (configured or derived, not external) whose wiring it"
                " could match; wire it here, or drop it from accepts",
            )
        if cap != target.capability:
            return _Judged(path, "ignored")  # e.g. the discovery receipt of an accepted `test`
        mine = wiring_digest(plan, target)
        if ext.get("wiring") != mine:
            return _Judged(
                path,
                "invalid",
                check="wiring",
                reason=f"receipt was made by provider {made_by!r} wired as"
                f" {short_digest(ext.get('wiring'))}, this checkout wires {made_by!r} as"
                f" {short_digest(mine)}; a receipt speaks only for the wiring that made it"
                f" (did execution.yaml change how {made_by} runs?) — prove again with this"
                " checkout's wiring",
            )
        trees_of = tuple(registry_repositories(target, plan))
    elif speaks_for_mine:
        accepts = ", ".join(provider.accepts) or "none"
        return _Judged(
            path,
            "invalid",
            check="wiring",
            reason=f"receipt was made by `prove` for provider {made_by!r}, which provider"
            f" {provider.name!r} does not accept (accepts: {accepts}); a prove-made receipt is"
            " accepted only from a provider listed in accepts whose wiring digest matches this"
            " checkout's",
        )
    else:
        return _Judged(path, "ignored")  # addressed to another provider
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
        return _Judged(path, "invalid", check=exc.check, reason=exc.reason)
    return _Judged(path, "valid", verified=verified)


_FOREVER = timedelta(days=365 * 1000)


def _verifies(data: bytes, keys: list[Trusted]) -> bool:
    try:
        verify_signatures(parse_envelope(data), [t.key for t in keys])
    except (ChangeloopError, RecursionError, ValueError, TypeError):
        return False
    return True


def registry_repositories(provider: Provider, plan: Plan) -> tuple[str, ...]:
    from changeloop.providers import registry

    adapter = registry.get(provider.adapter)
    return tuple(adapter.repositories(provider, plan)) if adapter is not None else ()


def _trees(ctx: RunContext, repos: Sequence[str]) -> dict[str, str]:
    """Current content of repositories beyond this provider's own (an accepted provider's)."""
    from changeloop.identity import content_identity

    out: dict[str, str] = {}
    for repo in repos:
        ident = ctx.identities.get(repo)
        if ident is None:
            ident = content_identity(ctx.plan.repositories[repo].path, include_untracked=True)
        out[repo] = ident.tree
    return out


def short_digest(value: object) -> str:
    if not isinstance(value, str) or not value:
        return "(no wiring digest)"
    return value[:19] + "…"


def _from_verified(ctx: RunContext, path: Path, verified: Verified) -> Outcome:
    provider = ctx.provider
    ext = verified.extension
    status: Status = "pass" if verified.status == "pass" else "fail"
    if verified.status == "inconclusive":
        status = "inconclusive"
    mark: ClaimMark = "credited" if status == "pass" else "failed"
    claims: dict[str, ClaimMark] = {c: mark for c in provider.claims}
    where = _display(path, ctx.plan.root)
    reason = None
    if status != "pass":
        reason = f"the external receipt {where} from {ext['issuer']} says {status}"
        if ext.get("reason"):
            reason += f": {ext['reason']}"
    url = verified.statement["predicate"].get("url")
    return Outcome(
        capability=provider.capability,
        status=status,
        reason=reason,
        claims=claims,
        observer=Observer(adapter=NAME, tool=str(ext.get("adapter")), version=None),
        issuer=verified.issuer,
        url=url if isinstance(url, str) else None,
        details={
            "receipt": {
                "id": verified.id,
                "path": where,
                "issuer": verified.issuer,
                "keyid": verified.keyid,
                "provider": ext["provider"],
                "capability": ext["capability"],
                "finishedOn": ext["finishedOn"],
                "adapter": ext["adapter"],
                "wiring": ext.get("wiring"),
            }
        },
    )


def _fail(capability: str, reason: str, findings: tuple[Finding, ...]) -> Outcome:
    return Outcome(
        capability=capability,
        status="fail",
        reason=reason,
        findings=findings,
        observer=Observer(adapter=NAME),
    )


def _display(path: Path, root: Path) -> str:
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return str(path)

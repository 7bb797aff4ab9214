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
from pathlib import Path
from typing import Any

from changeloop.dsse import VerificationError
from changeloop.errors import Problem
from changeloop.keys import KeyRefused, load_public_key
from changeloop.model import ClaimMark, Plan, Provider, Status
from changeloop.providers.base import Finding, Observer, Outcome, RunContext
from changeloop.verify import Expectation, Trusted, Verified, verify_envelope

NAME = "external"
DEFAULT_CAPABILITY = "review"
RUNS_COMMAND = False
MAX_ENVELOPE_BYTES = 4 * 1024 * 1024


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
        "keys": sorted(
            (k.role, k.name, k.public_key_pem.strip()) for k in provider.trusted_keys
        ),
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
    if envelope_files(ctx.provider, ctx.plan):
        return None
    where = _display(receipts_location(ctx.provider, ctx.plan), ctx.plan.root)
    return (
        f"no external receipt was supplied: {where} holds no *.json envelope; add one with"
        f" `changeloop receipt import FILE --change {ctx.plan.change.id}` or"
        f" `changeloop receipt sign --change {ctx.plan.change.id} …`"
    )


@dataclass(frozen=True)
class _Candidate:
    path: Path
    verified: Verified | None
    error: VerificationError | None


async def run(ctx: RunContext) -> list[Outcome]:
    provider, plan = ctx.provider, ctx.plan
    files = envelope_files(provider, plan)
    if not files:
        return []
    capability = provider.capability
    try:
        keys = [
            Trusted(load_public_key(k.public_key_pem, k.source), issuer=k.name)
            for k in provider.trusted_keys
        ]
    except KeyRefused as exc:
        return [_fail(capability, exc.reason, ())]
    expect = Expectation(
        change=plan.change.id,
        trees={repo: ctx.identities[repo].tree for repo in repositories(provider, plan)},
        claims=tuple(provider.claims),
        issuer=provider.issuer,
        now=ctx.now,
        max_age_s=provider.max_age_s,
    )
    candidates = [_check(path, keys, expect) for path in files]
    valid = [c for c in candidates if c.verified is not None]
    # A valid non-PASSED receipt for this content wins over any PASSED one.
    losing = [c for c in valid if c.verified is not None and c.verified.status != "pass"]
    chosen = losing[0] if losing else (valid[0] if valid else None)
    if chosen is not None and chosen.verified is not None:
        return [_from_verified(ctx, chosen.path, chosen.verified)]
    findings = tuple(
        Finding(
            kind=f"receipt-{c.error.check.lower()}" if c.error else "receipt-rejected",
            message=c.error.reason if c.error else "rejected",
            severity="error",
            file=_display(c.path, plan.root),
        )
        for c in candidates
    )
    reasons = "; ".join(
        f"{_display(c.path, plan.root)}: {c.error.check} check failed: {c.error.reason}"
        for c in candidates
        if c.error is not None
    )
    return [_fail(capability, f"no valid receipt for this content — {reasons}", findings)]


def _check(path: Path, keys: list[Trusted], expect: Expectation) -> _Candidate:
    try:
        size = path.stat().st_size
        if size > MAX_ENVELOPE_BYTES:
            raise VerificationError("json", f"{size} bytes is too large for a receipt envelope")
        data = path.read_bytes()
        return _Candidate(path, verify_envelope(data, keys, expect), None)
    except VerificationError as exc:
        return _Candidate(path, None, exc)
    except OSError as exc:
        return _Candidate(path, None, VerificationError("json", f"cannot read: {exc.strerror}"))


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


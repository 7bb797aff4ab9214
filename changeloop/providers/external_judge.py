"""The ``external`` provider's outcome, chosen from its envelopes as judged (pure).

Example::

    judge(provider, root, [Judged(path, "valid", verified=v)])   # [Outcome(status="pass")]
    judge(provider, root, [Judged(path, "ignored")])             # [] — no receipt at all

Rules (docs/adapters): a file nobody can parse or verify (``broken``) fails
closed — it may be the receipt that says FAILED; else a valid receipt whose
result is not PASSED wins over any PASSED one; else a valid PASSED one passes
and credits the provider's ``claims``; else, when some were addressed to it
but none was valid, ``fail`` naming per file the first check that failed; and
when nothing was addressed to it, no receipt (its claims stay ``unproven``).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from changeloop.model import ClaimMark, Provider, Status
from changeloop.outcome import Finding, Observer, Outcome
from changeloop.providers.external_check import ADAPTER, Judged
from changeloop.signing.verify import Verified


def judge(provider: Provider, root: Path, judged: Sequence[Judged]) -> list[Outcome]:
    """At most one outcome for ``provider`` from its envelope files (``root``: for paths)."""
    broken = [j for j in judged if j.kind == "broken"]
    invalid = [j for j in judged if j.kind == "invalid"]
    valid = [j for j in judged if j.kind == "valid" and j.verified is not None]
    if broken:
        findings = tuple(_finding(j, root) for j in (*broken, *invalid))
        reasons = "; ".join(_why(j, root) for j in broken)
        return [
            fail(
                provider.capability,
                f"receipt envelope(s) that cannot be parsed or verified fail closed — {reasons}",
                findings,
            )
        ]
    losing = [j for j in valid if j.verified is not None and j.verified.status != "pass"]
    chosen = losing[0] if losing else (valid[0] if valid else None)
    if chosen is not None and chosen.verified is not None:
        return [_from_verified(provider, display(chosen.path, root), chosen.verified)]
    if not invalid:
        return []  # nothing addressed to this provider: no receipt, claims stay unproven
    findings = tuple(_finding(j, root) for j in invalid)
    reasons = "; ".join(_why(j, root) for j in invalid)
    return [fail(provider.capability, no_valid_receipt(reasons), findings)]


def no_valid_receipt(reasons: str) -> str:
    """The reason of an external provider none of whose envelopes held (``gate`` says it too)."""
    return f"no valid receipt for this content — {reasons}"


def check_failed(where: str, check: str | None, reason: str | None) -> str:
    """One envelope's first failed check, as a reason names it."""
    return f"{where}: {check} check failed: {reason}"


def fail(capability: str, reason: str, findings: tuple[Finding, ...]) -> Outcome:
    """A ``fail`` outcome of the external adapter (also for a key it cannot load)."""
    return Outcome(
        capability=capability,
        status="fail",
        reason=reason,
        findings=findings,
        observer=Observer(adapter=ADAPTER),
    )


def display(path: Path, root: Path) -> str:
    """``path`` relative to the workspace root, as messages and receipts name it."""
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return str(path)


def _from_verified(provider: Provider, where: str, verified: Verified) -> Outcome:
    ext = verified.extension
    status: Status = "pass" if verified.status == "pass" else "fail"
    if verified.status == "inconclusive":
        status = "inconclusive"
    mark: ClaimMark = "credited" if status == "pass" else "failed"
    claims: dict[str, ClaimMark] = {c: mark for c in provider.claims}
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
        observer=Observer(adapter=ADAPTER, tool=str(ext.get("adapter")), version=None),
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


def _finding(j: Judged, root: Path) -> Finding:
    return Finding(
        kind=f"receipt-{(j.check or 'rejected').lower()}",
        message=j.reason or "rejected",
        severity="error",
        file=display(j.path, root),
    )


def _why(j: Judged, root: Path) -> str:
    return check_failed(display(j.path, root), j.check, j.reason)

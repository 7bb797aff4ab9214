"""Re-verify a change's latest receipts without running anything (docs/verbs/gate.md).

Example::

    result = evaluate(plan, public_keys)   # read (gate.read) then judge (gate.judge)
    result.status                          # "proven" | "not-proven"
    result.to_json()                       # the `gate --json` document

``gate`` is what an OpenSpec archive hook or a merge check calls. It reads the
receipts that already exist (:mod:`~changeloop.gate.files` finds them,
:mod:`~changeloop.gate.trust` says which keys count, :mod:`~changeloop.gate.check`
keeps a receipt only when its signature, content and wiring still hold) and
judges what survived with the one verdict (:mod:`~changeloop.gate.judge`).
Per claim, the reasons say why it is not proven, with a code a script can
branch on. The records are in :mod:`~changeloop.gate.records`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from changeloop.gate.check import plan_provider
from changeloop.gate.judge import judge, single_capability, speaks_for
from changeloop.gate.read import read_receipts
from changeloop.gate.records import (
    ClaimGate,
    GateResult,
    Kept,
    ReadEnvelope,
    Reading,
    Reason,
    ReasonCode,
    SetAside,
    Source,
)
from changeloop.model import Plan

__all__ = [
    "ClaimGate",
    "GateResult",
    "Kept",
    "ReadEnvelope",
    "Reading",
    "Reason",
    "ReasonCode",
    "SetAside",
    "Source",
    "evaluate",
    "judge",
    "plan_provider",
    "read_receipts",
    "single_capability",
    "speaks_for",
]


def evaluate(
    plan: Plan,
    public_keys: Sequence[Ed25519PublicKey] = (),
    *,
    local: Sequence[Path] | None = None,
    fingerprint: Callable[[Mapping[str, Any]], str | None] | None = None,
) -> GateResult:
    """Read, verify and judge every receipt of ``plan``'s change; runs nothing.

    ``local``: the workspace-signed envelopes to read instead of the latest ones
    (``report --run`` judges one run's receipts with these same checks).
    ``fingerprint``: what a workspace-signed receipt's fingerprint would be now
    (``changeloop.run.current.current_fingerprints``, which the verbs pass).
    """
    return judge(plan, read_receipts(plan, public_keys, local=local, fingerprint=fingerprint))

"""Receipts as the report names them: one :class:`ReceiptRef` per envelope gate kept or set aside.

Example::

    refs = refs_of(gate_result)
    refs.kept[id(kept)]      # the ref of one Kept (by identity: records are not hashable)
    worst_statuses(refs)     # provider -> its worst status, for the timeline's bars
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from changeloop.gate import GateResult
from changeloop.report.model import ReceiptRef
from changeloop.signing.dsse import VerificationError, read_envelope

STATUS_RANK = {"pass": 0, "inconclusive": 1, "fail": 2}


@dataclass
class Refs:
    kept: dict[int, ReceiptRef]  # id(gate.Kept) -> ref
    aside: dict[int, ReceiptRef]  # id(gate.SetAside) -> ref
    all: list[ReceiptRef]


def refs_of(result: GateResult) -> Refs:
    """A ref per envelope gate kept (verified) and per one it set aside (with its reason)."""
    kept: dict[int, ReceiptRef] = {}
    aside: dict[int, ReceiptRef] = {}
    for k in result.kept:
        ext = k.verified.extension
        kept[id(k)] = ReceiptRef(
            id=k.verified.id,
            provider=k.view.provider,
            capability=k.view.capability,
            status=k.view.status,
            path=k.envelope.uri,
            issuer=issuer(ext),
            keyid=k.verified.keyid,
            verified=True,
        )
    for s in result.set_aside:
        aside[id(s)] = ReceiptRef(
            id=None,
            provider=claimed_provider(s.envelope.path),
            capability=s.capability,
            status=None,
            path=s.envelope.uri,
            issuer=None,
            keyid=None,
            verified=s.code not in ("unverified",),
            problem=s.message,
            code=s.code,
        )
    return Refs(kept, aside, [*kept.values(), *aside.values()])


def issuer(ext: Mapping[str, Any]) -> str:
    """Who signed; for an external provider's receipt, also whose evidence it accepted."""
    name = str(ext.get("issuer"))
    details = ext.get("details")
    accepted = details.get("acceptedIssuer") if isinstance(details, dict) else None
    return f"{name} (accepted from {accepted})" if accepted else name


def claimed_provider(path: Path) -> str:
    """Which provider a set-aside envelope *says* it is from: display only, never trusted."""
    try:
        envelope = json.loads(read_envelope(path))
        payload = json.loads(base64.b64decode(envelope["payload"] + "=="))
        name = payload["predicate"]["changeloop"]["provider"]
        if isinstance(name, str):
            return name
    except (OSError, ValueError, KeyError, TypeError, RecursionError, VerificationError):
        pass
    return path.name.split(".", 1)[0]


def worst_statuses(refs: Refs) -> dict[str, str]:
    """Each provider's worst verified status; ``unknown`` where an envelope did not verify."""
    worst: dict[str, str] = {}
    for r in refs.kept.values():
        if r.status is not None and STATUS_RANK.get(r.status, 0) >= STATUS_RANK.get(
            worst.get(r.provider, "pass"), 0
        ):
            worst[r.provider] = r.status
    for r in refs.aside.values():
        if r.code == "unverified":
            worst[r.provider] = "unknown"
    return worst

"""Read every receipt of a change and check each one; judges nothing.

Example::

    reading = read_receipts(plan, public_keys)
    reading.kept        # verified, current content and wiring
    reading.set_aside   # the rest, each with its reason code

Workspace-signed envelopes (``.changeloop/receipts/<change>/``) are verified
with the workspace key, committed or imported ones with the keys the change's
``external`` providers name (within what each key may speak for); a
``--public-key`` is trusted for both.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from changeloop.gate.check import Trees, check, unauthenticated_hint
from changeloop.gate.files import committed_files, local_files, uri
from changeloop.gate.records import Kept, ReadEnvelope, Reading, SetAside, Source
from changeloop.gate.trust import Scope, committed_scope, external_keys, workspace_public_key
from changeloop.model import Plan
from changeloop.signing.dsse import VerificationError, read_envelope
from changeloop.signing.verify import Trusted


def read_receipts(
    plan: Plan,
    public_keys: Sequence[Ed25519PublicKey] = (),
    *,
    local: Sequence[Path] | None = None,
    fingerprint: Callable[[Mapping[str, Any]], str | None] | None = None,
) -> Reading:
    """Find, read and check the change's envelopes (``local``: instead of the latest ones).

    ``fingerprint`` (``changeloop.run.current``): a workspace-signed receipt's provider's
    fingerprint now; the receipts this workspace made are checked against it."""
    extra = [Trusted(k) for k in public_keys]
    local_key = workspace_public_key(plan.root)
    local_keys = ([Trusted(local_key)] if local_key else []) + extra
    committed_keys = [*external_keys(plan), *extra]
    trees = Trees(plan)
    now = datetime.now(UTC)  # one reading of the clock for every maxAge of this reading
    read: list[ReadEnvelope] = []
    kept: list[Kept] = []
    aside: list[SetAside] = []
    batches = [
        _Batch(
            "local",
            list(local) if local is not None else local_files(plan),
            local_keys,
            fingerprint=fingerprint,
        ),
        _Batch(
            "committed", committed_files(plan), committed_keys, committed_scope(plan, public_keys)
        ),
    ]
    for batch in batches:
        for path in batch.files:
            env, outcome = _read_one(plan, path, batch, trees, now)
            if env is not None:
                read.append(env)
            if isinstance(outcome, Kept):
                kept.append(outcome)
            else:
                aside.append(outcome)
    return Reading(
        read=tuple(read),
        kept=tuple(kept),
        set_aside=tuple(aside),
        trees={mode: dict(per) for mode, per in trees.by_mode.items()},
    )


@dataclass(frozen=True)
class _Batch:
    """Envelopes of one source, the keys they are verified with, and what those may say."""

    source: Source
    files: list[Path]
    keys: list[Trusted]
    scope: Scope | None = None
    fingerprint: Callable[[Mapping[str, Any]], str | None] | None = None


def _read_one(
    plan: Plan, path: Path, batch: _Batch, trees: Trees, now: datetime
) -> tuple[ReadEnvelope | None, Kept | SetAside]:
    """The envelope as read (None: it could not be), and whether it is kept."""
    source = batch.source
    try:
        # Bounded, and never blocks: a FIFO or a link to a device is refused.
        data = read_envelope(path)
    except OSError as exc:
        env = ReadEnvelope(path, uri(path, plan.root), "", source)
        return None, SetAside(env, "unverified", f"cannot read {env.uri}: {exc.strerror}", None)
    except VerificationError as exc:
        env = ReadEnvelope(path, uri(path, plan.root), "", source)
        return None, SetAside(env, "unverified", f"{env.uri} {exc.reason}", None)
    env = ReadEnvelope(path, uri(path, plan.root), hashlib.sha256(data).hexdigest(), source)
    if not batch.keys:
        who = (
            "there is no workspace key (.changeloop/keys/local.key)"
            if source == "local"
            else "no external provider of the change names a key"
        )
        message = (
            f"{env.uri}: nothing here can verify it: {who} and no --public-key was given; "
            "pass the public half of the key that signed it with --public-key PEM"
        )
        return env, SetAside(env, "unverified", message, *unauthenticated_hint(data))
    return env, check(
        plan,
        env,
        data,
        batch.keys,
        trees,
        scope=batch.scope,
        now=now,
        fingerprint=batch.fingerprint,
    )

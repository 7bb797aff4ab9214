"""Pass receipts by fingerprint (``.changeloop/cache/<hex>.json``).

Only ``pass`` receipts are ever stored — :func:`store` refuses anything else, and
:func:`load` re-checks — so a failure or an inconclusive is never reused
. Receipts of adapters that judge what they read afresh on every run
(``external``: a withdrawn review or a newly imported FAILED receipt must count,
and ``maxAge`` must keep ageing) are never stored nor reused. Envelopes are kept
as base64 of their exact bytes and come back byte for byte: a reused
receipt is the original receipt, with the same id.

Usage::

    cache.store(state.cache, fp, [envelope_bytes])
    cache.load(state.cache, fp)  # -> [envelope_bytes] or None
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Sequence
from pathlib import Path

from changeloop import fsio
from changeloop.errors import FileRefused
from changeloop.workspace.state import clear_non_file

__all__ = ["decode", "entry", "entry_path", "load", "load_unchecked", "reusable", "store"]

_FINGERPRINT = re.compile(r"^sha256:([0-9a-f]{64})$")
# Adapters whose verdict depends on files outside every fingerprint (the change's
# receipts/), so an equal fingerprint does not mean an equal result.
NEVER_CACHED = frozenset({"external"})
# Envelopes are capped at 4 MiB each (docs/threat-model.md); an entry holds a few, in base64.
ENTRY_LIMIT = 64 * fsio.MIB


def entry_path(cache_dir: Path, fingerprint: str) -> Path:
    """Where ``fingerprint``'s entry lives; a malformed fingerprint is a bug (ValueError)."""
    match = _FINGERPRINT.fullmatch(fingerprint)  # match() let a final newline through
    if match is None:
        raise ValueError(f"not a sha256 fingerprint: {fingerprint!r}")
    return cache_dir / f"{match[1]}.json"


def _extension_fields(envelope: bytes, keys: tuple[str, ...]) -> tuple[str | None, ...]:
    """String fields of the envelope payload's ``predicate.changeloop`` (None where not)."""
    try:
        doc = json.loads(envelope)
        payload = base64.b64decode(doc["payload"])
        ext = json.loads(payload)["predicate"]["changeloop"]
        values = [ext.get(key) for key in keys]
    except (ValueError, KeyError, TypeError, AttributeError, RecursionError):
        return (None,) * len(keys)
    return tuple(v if isinstance(v, str) else None for v in values)


def entry(
    cache_dir: Path, fingerprint: str, envelopes: Sequence[bytes]
) -> tuple[Path, bytes] | None:
    """What :func:`store` writes for pass ``envelopes``: the entry's path and bytes.

    None when they are never cached (re-judged on every run). The run's writer
    writes this in its group commit instead of calling :func:`store`.
    """
    if not envelopes:
        raise ValueError("nothing to cache")
    fields = [_extension_fields(e, ("status", "adapter")) for e in envelopes]  # one parse each
    if any(status != "pass" for status, _adapter in fields):
        raise ValueError("only pass receipts may be cached")
    if any(adapter in NEVER_CACHED for _status, adapter in fields):
        return None  # re-judged on every run
    return entry_of_passes(cache_dir, fingerprint, envelopes)


def entry_of_passes(
    cache_dir: Path, fingerprint: str, envelopes: Sequence[bytes]
) -> tuple[Path, bytes]:
    """:func:`entry` for envelopes the caller itself just sealed as passes of a cached adapter.

    The run's writer knows both facts without parsing its own envelopes again.
    """
    target = entry_path(cache_dir, fingerprint)  # refuses anything but sha256:<64 hex>
    doc = {
        "fingerprint": fingerprint,
        "envelopes": [base64.b64encode(e).decode() for e in envelopes],
    }
    return target, json.dumps(doc, sort_keys=True).encode("utf-8")


def store(cache_dir: Path, fingerprint: str, envelopes: Sequence[bytes]) -> None:
    """Atomically record pass ``envelopes`` for ``fingerprint`` (write, fsync, rename)."""
    made = entry(cache_dir, fingerprint, envelopes)
    if made is None:
        return
    target, data = made
    try:
        cache_dir.mkdir(parents=True, exist_ok=True)
        clear_non_file(target)  # a directory squatting on the name: damaged state, rebuilt
        fsio.write_atomic(target, data)
    except OSError:
        return  # an optimisation only: the pass stands, the next run is a miss


def load(cache_dir: Path, fingerprint: str) -> list[bytes] | None:
    """The pass envelopes cached for ``fingerprint``, byte for byte; None on any doubt.

    An entry that cannot be read (permissions, a directory, a FIFO, a symlink,
    too big, too deeply nested) is a miss, never an error.
    """
    envelopes = load_unchecked(cache_dir, fingerprint)
    return reusable(envelopes)


def reusable(envelopes: list[bytes] | None) -> list[bytes] | None:
    """``envelopes`` when every one is a pass of an adapter that may be cached; else None."""
    if envelopes is None or not all(_reusable(e) for e in envelopes):
        return None
    return envelopes


def load_unchecked(cache_dir: Path, fingerprint: str) -> list[bytes] | None:
    """:func:`load` without the per-envelope status and adapter check, for a caller that
    decodes every payload itself and checks both (the run verifies each
    signature anyway: one decode instead of two). None: a miss."""
    try:
        raw, _info = fsio.read_regular_stat(
            entry_path(cache_dir, fingerprint),
            limit=ENTRY_LIMIT,
            what="cache entry",
            follow_symlinks=False,
        )
    except FileRefused:
        return None
    return decode(raw, fingerprint)


def decode(raw: bytes, fingerprint: str) -> list[bytes] | None:
    """The envelopes an entry's bytes hold for ``fingerprint``, unchecked; None: a miss."""
    try:
        doc = json.loads(raw)
        if doc.get("fingerprint") != fingerprint:
            return None
        envelopes = [base64.b64decode(e, validate=True) for e in doc["envelopes"]]
    except (ValueError, KeyError, TypeError, AttributeError, RecursionError):
        return None
    return envelopes or None


def _reusable(envelope: bytes) -> bool:
    """A pass of an adapter whose results may be reused (one decode of the payload)."""
    try:
        doc = json.loads(envelope)
        ext = json.loads(base64.b64decode(doc["payload"]))["predicate"]["changeloop"]
    except (ValueError, KeyError, TypeError, RecursionError):
        return False
    if not isinstance(ext, dict):
        return False
    return ext.get("status") == "pass" and ext.get("adapter") not in NEVER_CACHED

"""A cached pass read back: its envelopes verified before a run reuses them byte for byte.

An entry counts only if every envelope verifies with this run's key, is a pass,
names the fingerprint it is filed under and comes from an adapter that may be
cached at all. Anything else (an entry edited on disk, signed with another key,
torn by a power cut) is a miss, and the provider runs again.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from changeloop.caching import local as cache
from changeloop.errors import ChangeloopError
from changeloop.outcome import Outcome, TestCounts
from changeloop.signing.dsse import parse_envelope, verify_signatures
from changeloop.workspace.prune import touch_used

__all__ = ["Parsed", "cached_outcome", "same_bytes", "verified_passes"]

Parsed = list[tuple[bytes, bytes, dict[str, Any]]]  # (envelope, payload, predicate.changeloop)


def verified_passes(cache_dir: Path, fp: str, public_key: Any) -> Parsed | None:
    """The cache entry of ``fp``, every envelope verified and a pass; None: a miss."""
    # cache.load's own status/adapter check, made here on the one decode the
    # signature check needs anyway
    envelopes = cache.load_unchecked(cache_dir, fp)
    if not envelopes:
        return None
    parsed = []
    for envelope in envelopes:
        try:
            payload, _key = verify_signatures(parse_envelope(envelope), [public_key])
            ext = json.loads(payload)["predicate"]["changeloop"]
        except (ChangeloopError, ValueError, KeyError, TypeError, RecursionError):
            return None
        if not isinstance(ext, dict) or ext.get("adapter") in cache.NEVER_CACHED:
            return None
        if ext.get("status") != "pass" or ext.get("fingerprint") != fp:
            return None
        parsed.append((envelope, payload, ext))
    touch_used(cache.entry_path(cache_dir, fp))  # when it was last used, for pruning
    return parsed


def cached_outcome(ext: dict[str, Any]) -> Outcome:
    """The pass a verified receipt's ``changeloop`` predicate records, as an outcome."""
    return Outcome(
        capability=ext["capability"],
        status="pass",
        provider=ext["provider"],
        claims=ext.get("claims") or {},
        input_mode=ext.get("inputMode"),
        tests=_counts(ext.get("tests")),
    )


def same_bytes(path: Path, data: bytes) -> bool:
    """``path`` holds exactly ``data`` already (a reused receipt need not be written again)."""
    try:
        return path.stat().st_size == len(data) and path.read_bytes() == data
    except OSError:
        return False


def _counts(value: Any) -> TestCounts | None:
    """A cached receipt's ``tests`` back as counts (None when absent or malformed)."""
    keys = ("discovered", "passed", "failed", "skipped")
    if not isinstance(value, dict) or not all(type(value.get(k)) is int for k in keys):
        return None
    return TestCounts(**{k: value[k] for k in keys})

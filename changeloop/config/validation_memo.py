"""A memo of configuration documents that passed their JSON Schema (``validated.json``).

``prove`` re-reads the same evidence.yaml and execution.yaml on every run; their
JSON Schema validation (and importing jsonschema for it) is a fixed cost of each
re-prove. Within :func:`validated_memo`, :func:`lookup` says whether these very
data passed this very schema before (digest of changeloop's version, the schema
text and the parsed data); :func:`remember` records a pass. Only passes are
remembered; anything else validates as before. Unsigned on purpose: whoever can
write ``.changeloop/`` can read the workspace key too
(docs/decisions/080-a-schema-pass-is-remembered.md).

    with validated_memo(state_dir):
        key, passed = lookup(doc.data, "evidence-v3.json")
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from changeloop import __version__, fsio, schemas
from changeloop.errors import FileRefused

__all__ = ["MEMO_FILE", "lookup", "remember", "validated_memo"]

MEMO_FILE = "validated.json"
_MEMO_LIMIT = 256  # digests kept (most recent last)


class _Memo:
    def __init__(self) -> None:
        self.known: frozenset[str] = frozenset()
        self.added: set[str] = set()


_VALID = _Memo()


def _memo_key(data: Any, schema_file: str) -> str | None:
    try:
        text = json.dumps(
            [__version__, schema_file, schemas.load(schema_file), data],
            sort_keys=True,
            ensure_ascii=False,
            allow_nan=False,
        )
    except (TypeError, ValueError, RecursionError):
        return None  # not plain JSON data: always validated
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


@contextlib.contextmanager
def validated_memo(state: Path | None) -> Iterator[None]:
    """Within the block, schema validation consults and feeds ``state``/validated.json.

    ``state`` is ``.changeloop/`` after ``state.check_state`` accepted it (None: no
    memo). Reading is bounded and never follows a symlink; a damaged file is no memo.
    """
    if state is None:
        yield
        return
    path = state / MEMO_FILE
    try:
        raw = fsio.read_regular_stat(path, limit=fsio.MIB, what="memo", follow_symlinks=False)[0]
        listed = json.loads(raw)
        known = [k for k in listed if isinstance(k, str)] if isinstance(listed, list) else []
    except (FileRefused, ValueError, RecursionError):
        known = []
    _VALID.known, _VALID.added = frozenset(known), set()
    try:
        yield
    finally:
        added = sorted(_VALID.added - _VALID.known)
        _VALID.known, _VALID.added = frozenset(), set()
        if added:
            kept = [k for k in known if k not in added][-(_MEMO_LIMIT - len(added)) :] + added
            with contextlib.suppress(OSError):
                state.mkdir(exist_ok=True)
                fsio.write_atomic(path, json.dumps(kept[-_MEMO_LIMIT:]).encode(), durable=False)


def lookup(data: Any, schema_file: str) -> tuple[str | None, bool]:
    """The memo key of ``data`` against ``schema_file`` (None: not plain JSON data, never
    remembered), and whether it passed before."""
    key = _memo_key(data, schema_file)
    return key, key is not None and key in _VALID.known


def remember(key: str) -> None:
    """``key`` passed: written to the memo when the :func:`validated_memo` block ends."""
    _VALID.added.add(key)

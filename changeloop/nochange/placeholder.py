"""The run id in a recorded answer: a placeholder, replaced by the answering run's id.

Apart from :mod:`~changeloop.nochange.record` (which writes it), so that answering
imports none of what writing a record needs.
"""

from __future__ import annotations

from typing import Any

__all__ = ["substitute"]


def substitute(value: Any, old: str, new: str) -> Any:
    """``value`` with ``old`` replaced by ``new`` in every string of it, keys included."""
    if isinstance(value, str):
        return value.replace(old, new)
    if isinstance(value, dict):
        return {substitute(k, old, new): substitute(v, old, new) for k, v in value.items()}
    if isinstance(value, list):
        return [substitute(v, old, new) for v in value]
    return value

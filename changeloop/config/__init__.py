"""Configuration loading: YAML with marks → JSON Schema → frozen dataclasses.

``evidence.load_evidence`` and ``execution.load_execution`` are the entry
points; ``yamlio`` is the safe YAML reader both share.
"""

from __future__ import annotations

from changeloop.config.evidence import load_evidence
from changeloop.config.execution import load_execution

__all__ = ["load_evidence", "load_execution"]

"""Drift the last ``changeloop adapters check`` recorded, while the drifted tool is still there.

Example::

    recorded_drift(root, {"web": root / "web"})
    # [Finding(kind="tool-contract-drift", message="vitest 0.0.1 at … lacks flag --outputFile …")]

``evidence doctor`` and ``prove`` both consult it: neither asks the tools (doctor
executes nothing; prove runs only what the wiring names), so they read the record
``adapters check`` wrote, for as long as the tool it checked is unchanged.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from changeloop.contracts.record import RECORD, still_same
from changeloop.outcome import Finding


@dataclass(frozen=True)
class Drift:
    repository: str
    tool: str
    missing: tuple[str, ...]
    message: str


def drifted(root: Path, repositories: Mapping[str, Path]) -> list[Drift]:
    """The recorded drift of tools these repositories resolve, still installed as checked."""
    try:
        doc = json.loads((root / RECORD).read_text(encoding="utf-8"))
        tools = [t for t in doc["tools"] if isinstance(t, dict)]
    except (OSError, ValueError, KeyError, TypeError):
        return []
    paths = {str(path.resolve()): name for name, path in repositories.items()}
    out: list[Drift] = []
    for tool in tools:
        name = paths.get(str(tool.get("repositoryPath")))
        if name is None or tool.get("status") != "drift" or not still_same(tool.get("stamp")):
            continue
        missing = tuple(str(m.get("name")) for m in tool.get("missing") or [] if _is(m))
        out.append(Drift(name, str(tool.get("tool")), missing, str(tool.get("message"))))
    return out


def _is(value: Any) -> bool:
    return isinstance(value, dict)


def recorded_drift(root: Path, repositories: Mapping[str, Path]) -> list[Finding]:
    """:func:`drifted` as findings for prove (a warning: it decides nothing)."""
    return [
        Finding(
            kind="tool-contract-drift",
            severity="warning",
            message=f"{d.repository}: {d.message} (recorded by `changeloop adapters check`)",
        )
        for d in drifted(root, repositories)
    ]

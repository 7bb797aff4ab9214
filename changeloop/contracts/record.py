"""The record of the last ``changeloop adapters check``, which ``evidence doctor`` and
``prove`` read instead of asking the tools (:mod:`~changeloop.contracts.drift`)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from changeloop.contracts.check import ToolReport

RECORD = Path(".changeloop") / "adapters-check.json"


def save_record(root: Path, reports: Sequence[ToolReport]) -> None:
    """What the last ``adapters check`` found, for ``doctor`` (which runs nothing)."""
    from changeloop.signing.statement import write_atomic  # noqa: PLC0415 - statement pulls in cryptography; only saving the record needs it
    from changeloop.workspace.state import ensure_gitignored  # noqa: PLC0415 - only saving the record needs the workspace state

    ensure_gitignored(root)
    doc = {
        "version": 1,
        "tools": [
            {**r.to_json(), "repositoryPath": r.repo_path, "stamp": r.stamp}
            for r in reports
            if r.status != "absent"
        ],
    }
    write_atomic(root / RECORD, (json.dumps(doc, indent=2) + "\n").encode())


def still_same(recorded: Any) -> bool:
    """Whether the tool file a record stamped is still the one checked."""
    if not isinstance(recorded, dict) or not isinstance(recorded.get("file"), str):
        return False
    return tool_stamp(Path(recorded["file"])) == recorded


def tool_stamp(path: Path | None) -> dict[str, Any] | None:
    """The size and modification time of a checked tool's file: it is the same tool while
    they are."""
    if path is None:
        return None
    try:
        st = path.stat()
    except OSError:
        return None
    return {"file": str(path), "size": st.st_size, "mtimeNs": st.st_mtime_ns}

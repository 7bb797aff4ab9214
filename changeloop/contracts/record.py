"""Where the last ``changeloop adapters check`` keeps what it found, and whether a tool it
checked is still there as checked: what ``evidence doctor`` and ``prove`` read instead of
asking the tools (:mod:`~changeloop.contracts.drift`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

RECORD = Path(".changeloop") / "adapters-check.json"


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

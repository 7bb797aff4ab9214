"""Doctor's word on tool-contract drift, read from the last ``adapters check`` record."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from changeloop.contracts import RECORD, still_same
from changeloop.detect.doctor.finding import DoctorFinding

if TYPE_CHECKING:
    from changeloop.detect import ChangeContext


def contract_findings(ctx: ChangeContext) -> list[DoctorFinding]:
    """Drift the last ``changeloop adapters check`` found in this change's repositories,
    while the drifted tool is still the one installed. Doctor executes nothing, so it
    reads the record instead of asking the tools (a repository's node_modules/.bin and
    .venv are the project's own code)."""
    try:
        doc = json.loads((ctx.root / RECORD).read_text(encoding="utf-8"))
        tools = [t for t in doc["tools"] if isinstance(t, dict)]
    except (OSError, ValueError, KeyError, TypeError):
        return []
    paths = {str(repo.path.resolve()): name for name, repo in ctx.repositories.items()}
    out: list[DoctorFinding] = []
    for tool in tools:
        name = paths.get(str(tool.get("repositoryPath")))
        if name is None or tool.get("status") != "drift" or not still_same(tool.get("stamp")):
            continue
        missing = ", ".join(str(m.get("name")) for m in tool.get("missing") or [])
        out.append(
            DoctorFinding(
                "tool-contract-drift",
                str(tool.get("message")),
                f"install a {tool.get('tool')} version that has {missing} (pin it in the "
                "repository's lock file), or wire the provider's command by hand in "
                "execution.yaml; then run `changeloop adapters check` again",
                "changeloop adapters check",
                repository=name,
            )
        )
    return out

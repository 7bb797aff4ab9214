"""Doctor's word on tool-contract drift, read from the last ``adapters check`` record."""

from __future__ import annotations

from typing import TYPE_CHECKING

from changeloop.contracts.drift import drifted
from changeloop.detect.doctor.finding import DoctorFinding

if TYPE_CHECKING:
    from changeloop.detect.types import ChangeContext


def contract_findings(ctx: ChangeContext) -> list[DoctorFinding]:
    """Drift the last ``changeloop adapters check`` found in this change's repositories,
    while the drifted tool is still the one installed. Doctor executes nothing, so it
    reads the record instead of asking the tools (a repository's node_modules/.bin and
    .venv are the project's own code)."""
    repos = {name: repo.path for name, repo in ctx.repositories.items()}
    return [
        DoctorFinding(
            "tool-contract-drift",
            d.message,
            f"install a {d.tool} version that has {', '.join(d.missing)} (pin it in the "
            "repository's lock file), or wire the provider's command by hand in "
            "execution.yaml; then run `changeloop adapters check` again",
            "changeloop adapters check",
            repository=d.repository,
        )
        for d in drifted(ctx.root, repos)
    ]

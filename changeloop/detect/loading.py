"""Load a change's evidence and execution for bootstrap, through the config loaders.

Validation belongs to ``changeloop.config`` (via ``changeloop.plan``): bootstrap
reads exactly what ``prove`` reads, so a file ``prove`` refuses is refused here
with the same messages.
"""

from __future__ import annotations

from pathlib import Path

from changeloop.model import Evidence, Execution, Repository
from changeloop.workspace.changeref import ChangeRef


def load(root: Path, change: ChangeRef) -> tuple[Evidence, Execution | None]:
    from changeloop.plan import load_change_config  # noqa: PLC0415 - plan pulls in yaml and the config loader; only loading needs it

    return load_change_config(root, change)


def repositories(
    root: Path, evidence: Evidence, execution: Execution | None
) -> dict[str, Repository]:
    """Repository records from evidence.yaml (default ``{self: .}``), absolute paths."""
    repos = dict(evidence.repositories) or {"self": "."}
    setup = execution.setup if execution else {}
    return {
        name: Repository(
            name=name, path=(root / rel).resolve(), relpath=rel, setup=setup.get(name, ())
        )
        for name, rel in repos.items()
    }

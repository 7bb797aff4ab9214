"""Where a change's receipts are: the workspace's latest and the committed or imported ones.

Example::

    local_files(plan)      # .changeloop/receipts/<change>/*.json (workspace-signed)
    committed_files(plan)  # openspec/changes/<id>/receipts/*.json + external `receipts:`
"""

from __future__ import annotations

from pathlib import Path

from changeloop.model import Plan


def local_files(plan: Plan) -> list[Path]:
    """The change's latest receipts in the workspace state, in name order."""
    where = plan.root / ".changeloop" / "receipts" / plan.change.id
    return sorted(p for p in where.glob("*.json") if p.is_file()) if where.is_dir() else []


def committed_files(plan: Plan) -> list[Path]:
    """``openspec/changes/<id>/receipts/*.json`` and every external provider's ``receipts:``."""
    from changeloop.providers import external  # noqa: PLC0415 - providers.external pulls in anyio and cryptography; only committed files need it

    found: dict[Path, None] = {}
    default = plan.change.path / "receipts"
    if default.is_dir():
        for p in sorted(default.glob("*.json")):
            if p.is_file():
                found[p.resolve()] = None
    for provider in plan.providers.values():
        if provider.adapter == "external":
            for p in external.envelope_files(provider, plan):
                found[p.resolve()] = None
    return list(found)


def uri(path: Path, root: Path) -> str:
    """``path`` relative to the workspace root (as the JSON and the VSA name it), else as is."""
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return str(path)

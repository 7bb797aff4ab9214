"""Where a node tool comes from: ``node_modules/.bin``, its package's version, package.json.

Read by :mod:`changeloop.contracts` (``adapters check``): resolving a node tool the
way ``npx`` would, and knowing which packages a repository's manifest calls for.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

__all__ = ["declared_packages", "node_bin", "package_version"]


def node_bin(repo: Path, root: Path, name: str) -> Path | None:
    """``node_modules/.bin/<name>`` from the repository up to the workspace root (like npx)."""
    here = repo.resolve()
    stop = root.resolve()
    while True:
        candidate = here / "node_modules" / ".bin" / name
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
        if here in (stop, here.parent) or stop not in here.parents:
            return None
        here = here.parent


def package_version(bin_path: Path, package: str) -> str | None:
    modules = bin_path.parent.parent  # node_modules/
    try:
        data = json.loads((modules / package / "package.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    version = data.get("version") if isinstance(data, dict) else None
    return version if isinstance(version, str) else None


_DEPENDENCY_FIELDS = ("dependencies", "devDependencies", "optionalDependencies", "peerDependencies")


def declared_packages(repo: Path) -> set[str]:
    """The packages the repository's package.json depends on (none when it is unreadable,
    not a regular file, or over the manifests' size cap: ``detect.manifests.read_json``)."""
    from changeloop.project.manifests import read_json  # noqa: PLC0415 - manifests pull in tomllib; only package.json reading needs them

    manifest = read_json(repo / "package.json") or {}
    names: set[str] = set()
    for field in _DEPENDENCY_FIELDS:
        table = manifest.get(field)
        if isinstance(table, dict):
            names.update(str(name) for name in table)
    return names

"""Load a change's evidence and execution for bootstrap, via the config loaders.

The config package owns validation; while one of its loaders is missing (the
helpers are built in parallel) a minimal reader keeps bootstrap usable.
It accepts only the keys bootstrap needs and never writes anything.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, cast

import yaml

from changeloop.errors import ConfigError, Location, Problem
from changeloop.model import ChangeRef, Claim, Evidence, Execution, Provider, Repository


def load_evidence(change: ChangeRef) -> Evidence:
    path = change.path / "evidence.yaml"
    if not path.is_file():
        raise ConfigError(
            Problem(
                "evidence_missing",
                f"{change.id} has no evidence.yaml",
                Location(str(path)),
                "write evidence.yaml (DESIGN.md §2.1)",
            )
        )
    real = _loader("changeloop.config.evidence", "load_evidence")
    return _fallback_evidence(path) if real is None else cast(Evidence, real(path))


def load_execution(change: ChangeRef) -> Execution | None:
    path = change.path / "execution.yaml"
    if not path.is_file():
        return None
    real = _loader("changeloop.config.execution", "load_execution")
    return _fallback_execution(path) if real is None else cast(Execution, real(path))


def _loader(module: str, name: str) -> Callable[[Path], object] | None:
    """The config package's loader, or None while it is not built yet."""
    try:
        found = getattr(importlib.import_module(module), name, None)
    except ImportError:
        return None
    return cast(Callable[[Path], object], found) if callable(found) else None


def repositories(root: Path, evidence: Evidence) -> dict[str, Repository]:
    """Repository records from evidence.yaml (default ``{self: .}``), absolute paths."""
    repos = dict(evidence.repositories) or {"self": "."}
    return {
        name: Repository(name=name, path=(root / rel).resolve(), relpath=rel)
        for name, rel in repos.items()
    }


def _read(path: Path) -> dict[str, Any]:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError(
            Problem("yaml_invalid", f"cannot read {path.name}: {exc}", Location(str(path)))
        ) from exc
    if not isinstance(data, dict):
        raise ConfigError(
            Problem("yaml_invalid", f"{path.name} is not a mapping", Location(str(path)))
        )
    return data


def _strs(value: Any) -> tuple[str, ...]:
    return tuple(str(v) for v in value) if isinstance(value, list) else ()


def _fallback_evidence(path: Path) -> Evidence:
    data = _read(path)
    repos = data.get("repositories")
    requires_raw = data.get("requires") or []
    requires: dict[str, tuple[str, ...] | None] = {}
    if isinstance(requires_raw, list):
        requires = {str(c): None for c in requires_raw}
    elif isinstance(requires_raw, dict):
        requires = {str(c): (_strs(r) or None) for c, r in requires_raw.items()}
    claims: dict[str, Claim] = {}
    for cid, raw_body in (data.get("claims") or {}).items():
        body = raw_body if isinstance(raw_body, dict) else {}
        claims[str(cid)] = Claim(
            id=str(cid),
            statement=body.get("statement"),
            requires=_strs(body.get("requires")),
            repository=body.get("repository"),
        )
    return Evidence(
        path=path,
        version=int(data.get("version", 3)),
        repositories={str(k): str(v) for k, v in repos.items()}
        if isinstance(repos, dict)
        else {"self": "."},
        requires=requires,
        claims=claims,
        declared_repositories=isinstance(repos, dict),
    )


def _fallback_execution(path: Path) -> Execution:
    data = _read(path)
    providers: dict[str, Provider] = {}
    raw: Mapping[str, Any] = data.get("providers") or {}
    for name, raw_body in raw.items():
        body = raw_body if isinstance(raw_body, dict) else {}
        adapter = str(body.get("adapter", "command"))
        default = {"test-discovery": "test", "playwright": "browser"}.get(adapter, str(name))
        providers[str(name)] = Provider(
            name=str(name),
            adapter=adapter,
            capability=str(
                body.get(
                    "capability",
                    name
                    if name in ("test", "discovery", "browser", "static-analysis")
                    else default,
                )
            ),
            repository=body.get("repository"),
            command=_strs(body.get("command")) or None,
            report=body.get("report"),
            keys=frozenset(body),
        )
    return Execution(
        path=path, version=int(data.get("version", 1)), providers=providers, services={}, setup={}
    )

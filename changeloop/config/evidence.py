"""Load ``evidence.yaml`` (version 3): what a change says must be true.

The file is validated against ``schemas/evidence-v3.json`` and frozen into
:class:`changeloop.model.Evidence`; nothing past this module sees a dict::

    evidence = load_evidence(change.path / "evidence.yaml")
    evidence.requires      # {"test": None} — None means every repository
    evidence.claims["greeting"].requires
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

from changeloop.config.schema import check_version, schema_problems
from changeloop.config.yamlio import load_yaml
from changeloop.errors import ConfigError
from changeloop.marks import Document
from changeloop.model import Archetype, Claim, Evidence, InputMode

READS = 3
SCHEMA = "evidence-v3.json"
DEFAULT_REPOSITORIES = {"self": "."}


def load_evidence(path: Path, display: str | None = None) -> Evidence:
    """Read, validate and freeze one evidence.yaml; ConfigError lists every problem."""
    doc = load_yaml(path, display)
    return evidence_from_document(doc)


def evidence_from_document(doc: Document) -> Evidence:
    check_version(doc, file="evidence.yaml", reads=READS)
    problems = schema_problems(doc, SCHEMA, family="evidence", version=READS)
    if problems:
        raise ConfigError(problems)
    data: dict[str, Any] = doc.data
    declared = "repositories" in data and bool(data["repositories"])
    repositories = dict(data["repositories"]) if declared else dict(DEFAULT_REPOSITORIES)
    raw_requires = data.get("requires") or []
    requires: dict[str, tuple[str, ...] | None]
    if isinstance(raw_requires, list):
        requires = {capability: None for capability in raw_requires}
    else:
        requires = {capability: tuple(repos) for capability, repos in raw_requires.items()}
    claims = {
        claim_id: _claim(claim_id, body or {}, doc)
        for claim_id, body in (data.get("claims") or {}).items()
    }
    return Evidence(
        marks=doc,
        path=doc.path,
        version=READS,
        repositories=repositories,
        requires=requires,
        claims=claims,
        declared_repositories=declared,
    )


def _claim(claim_id: str, body: dict[str, Any], doc: Document) -> Claim:
    ref = body.get("ref")
    return Claim(
        id=claim_id,
        statement=body.get("statement"),
        requires=tuple(body.get("requires") or ()),
        repository=body.get("repository"),
        ref=None if ref is None else str(ref),
        input_mode=cast("InputMode | None", body.get("inputMode")),
        location=doc.location(("claims", claim_id), key=True),
        archetype=cast("Archetype", body.get("archetype", "behavioral")),
    )

"""The records detection produces, shared by detect, derive, init and doctor."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from changeloop.model import Evidence, Execution, Repository
from changeloop.workspace.changeref import ChangeRef

Source = Literal["configured", "manifest", "environment", "source_import"]

# Lower rank wins (docs/bootstrap.md).
SOURCE_RANK: dict[str, int] = {
    "configured": 0,
    "manifest": 1,
    "environment": 2,
    "source_import": 3,
}
TEST_TYPES: tuple[str, ...] = ("python", "javascript", "rust", "browser")


@dataclass(frozen=True)
class Detection:
    """One framework found in one repository for one test type, and why we believe it."""

    adapter: str  # pytest | unittest | vitest | jest | mocha | node-test | cargo | playwright
    test_type: str  # python | javascript | rust | browser
    detection_source: str  # configured | manifest | environment | source_import
    version: str | None
    evidence: str  # file and key, e.g. "pyproject.toml [tool.pytest.ini_options]"
    # The maintainers' own runner arguments (unittest: what follows `-m unittest`),
    # kept by derived wiring; not part of detect's JSON.
    args: tuple[str, ...] = ()

    @property
    def confidence(self) -> Literal["high", "low"]:
        """Configured or manifest evidence is what a careful engineer would act on."""
        return "high" if self.detection_source in ("configured", "manifest") else "low"

    def to_json(self) -> dict[str, Any]:
        return {
            "adapter": self.adapter,
            "test_type": self.test_type,
            "detection_source": self.detection_source,
            "version": self.version,
            "evidence": self.evidence,
        }


def select(candidates: list[Detection]) -> list[Detection]:
    """Keep the best candidate per test type; ties keep the first found (file order)."""
    best: dict[str, Detection] = {}
    for cand in candidates:
        cur = best.get(cand.test_type)
        if (
            cur is None
            or SOURCE_RANK[cand.detection_source] < SOURCE_RANK[cur.detection_source]
            or (
                cur.version is None
                and cand.version is not None
                and cand.adapter == cur.adapter
                and cand.detection_source == cur.detection_source
            )
        ):
            best[cand.test_type] = cand
    return [best[t] for t in TEST_TYPES if t in best]


@dataclass(frozen=True)
class ChangeContext:
    """A change with everything bootstrap reads about it."""

    root: Path
    change: ChangeRef
    evidence: Evidence
    execution: Execution | None
    repositories: Mapping[str, Repository]
    detections: Mapping[str, list[Detection]]
    # Directories (relative to each repository) the scan could not open and skipped.
    unreadable: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    # derive.derivation_possible's answer when load_context asked it (only_if_derivable)
    derivable: bool | None = None

"""Which test frameworks a repository declares, read without executing anything.

    >>> from changeloop.detect.repository import detect_repository
    >>> [d.adapter for d in detect_repository(Path("examples/web"))]
    ['playwright']

``detect_repository`` parses manifests (TOML/JSON/INI as data), looks for the
repository's own installed tools (``node_modules/.bin``, ``.venv``) and, last,
test files' imports. One detection per test type survives, by the precedence
configured > manifest > environment > source import (docs/bootstrap.md).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from changeloop.detect.types import Detection, select
from changeloop.model import Execution, Provider

if TYPE_CHECKING:  # the readers are imported when a repository is walked (prove rarely does)
    from changeloop.project.manifests import Unreadable

__all__ = [
    "configured_detection",
    "configured_for",
    "detect_repository",
    "provider_detection",
]


def configured_detection(provider: Provider) -> Detection | None:
    """What framework a configured provider runs, judged from its adapter and argv."""
    argv = provider.command or ()
    words = {part.rsplit("/", 1)[-1] for part in argv}
    evidence = f"execution.yaml providers.{provider.name}"
    if provider.adapter == "playwright" or "playwright" in words:
        return Detection("playwright", "browser", "configured", None, evidence)
    if provider.adapter not in ("test-discovery", "command"):
        return None
    if "pytest" in words or "py.test" in words:
        return Detection("pytest", "python", "configured", None, evidence)
    if "unittest" in words and ("-m" in argv or "-munittest" in argv):
        return Detection("unittest", "python", "configured", None, evidence)
    if "vitest" in words:
        return Detection("vitest", "javascript", "configured", None, evidence)
    if "jest" in words:
        return Detection("jest", "javascript", "configured", None, evidence)
    if "mocha" in words:
        return Detection("mocha", "javascript", "configured", None, evidence)
    if "node" in words and "--test" in argv:
        return Detection("node-test", "javascript", "configured", None, evidence)
    if "cargo" in words and ("test" in argv or "nextest" in argv):
        return Detection("cargo", "rust", "configured", None, evidence)
    return None


def provider_detection(provider: Provider, version: str | None = None) -> Detection | None:
    """The framework a planned provider runs, where it was detected and its version.

    Configured wiring says ``configured``; derived wiring keeps the source it was
    derived from. ``version``: what the run observed, else what detection read.
    """
    found = configured_detection(provider)
    if found is None:
        return None
    source, known = found.detection_source, found.version
    evidence = found.evidence
    if provider.origin == "derived":
        source, known = provider.detected or ("manifest", None)
        evidence = "derived wiring"
    return Detection(found.adapter, found.test_type, source, version or known, evidence)


def candidates(path: Path, unreadable: Unreadable | None = None) -> list[Detection]:
    """Every signal found in the repository itself, before precedence."""
    from changeloop.detect import javascript, python, rust  # noqa: PLC0415 - the readers pull in yaml and the manifest parsers; a prove that derives nothing never walks a repository

    return python.detect(path, unreadable) + javascript.detect(path, unreadable) + rust.detect(path)


def detect_repository(
    path: Path, configured: Iterable[Provider] = (), unreadable: Unreadable | None = None
) -> list[Detection]:
    """The selected framework per test type for the repository at ``path``.

    ``configured`` are execution.yaml providers belonging to this repository;
    they outrank anything read from the repository. Versions of configured
    frameworks are filled in from the repository's own manifests when known.
    Directories the source scan could not open are added to ``unreadable``.
    """
    found = candidates(path, unreadable)
    chosen: list[Detection] = []
    for provider in configured:
        det = configured_detection(provider)
        if det is not None:
            known = next((d.version for d in found if d.adapter == det.adapter and d.version), None)
            chosen.append(
                Detection(det.adapter, det.test_type, det.detection_source, known, det.evidence)
            )
    return select(chosen + found)


def configured_for(execution: Execution | None, repo: str, single: bool) -> list[Provider]:
    if execution is None:
        return []
    return [
        p
        for p in execution.providers.values()
        if p.repository == repo or (p.repository is None and single)
    ]

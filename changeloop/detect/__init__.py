"""Detection: which test frameworks a repository declares, read without executing anything.

    >>> from changeloop.detect import detect_repository
    >>> [d.adapter for d in detect_repository(Path("examples/web"))]
    ['playwright']

``detect_repository`` parses manifests (TOML/JSON/INI as data), looks for the
repository's own installed tools (``node_modules/.bin``, ``.venv``) and, last,
test files' imports. One detection per test type survives, by the precedence
configured > manifest > environment > source import (docs/bootstrap.md).
``derived_for`` is what ``prove`` calls to get derived wiring for a change.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from changeloop.detect.types import Detection, select
from changeloop.model import Evidence, Execution, Provider, Repository
from changeloop.workspace.changeref import ChangeRef

if TYPE_CHECKING:  # the readers are imported when a repository is walked (prove rarely does)
    from changeloop.project.manifests import Unreadable

__all__ = [
    "ChangeContext",
    "Detection",
    "derived_for",
    "detect_repository",
    "load_context",
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
    from changeloop.detect import javascript, python, rust  # noqa: PLC0415 - cycle: changeloop.detect.javascript, .python and .rust import this package

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


def configured_for(execution: Execution | None, repo: str, single: bool) -> list[Provider]:
    if execution is None:
        return []
    return [
        p
        for p in execution.providers.values()
        if p.repository == repo or (p.repository is None and single)
    ]


def load_context(
    root: Path, change: ChangeRef, *, only_if_derivable: bool = False
) -> ChangeContext:
    """The change's configuration and what each repository declares.

    ``only_if_derivable`` (prove): when ``derive.derivation_possible`` says nothing
    could be derived for this change, every repository's detections stay empty (no
    walk of the tree; ``derived_explained`` finds nothing either way).
    """
    from changeloop.detect import loading  # noqa: PLC0415 - cycle: changeloop.detect.loading imports this package

    evidence, execution = loading.load(root, change)
    repos = loading.repositories(root, evidence, execution)
    single = len(repos) == 1
    detections: dict[str, list[Detection]] = {name: [] for name in repos}
    unreadable: dict[str, tuple[str, ...]] = {}
    detect = True
    if only_if_derivable:
        from changeloop.detect.derive import derivation_possible  # noqa: PLC0415 - cycle: changeloop.detect.derive imports this package

        detect = derivation_possible(evidence, execution, repos)
    if detect:
        from changeloop.project.manifests import Unreadable  # noqa: PLC0415 - manifests pull in tomllib; kept off a prove that derives nothing
    for name, repo in repos.items() if detect else ():
        skipped = Unreadable()
        detections[name] = detect_repository(
            repo.path, configured_for(execution, name, single), skipped
        )
        if skipped.paths:
            unreadable[name] = skipped.sorted()
    return ChangeContext(
        root,
        change,
        evidence,
        execution,
        repos,
        detections,
        unreadable,
        derivable=detect if only_if_derivable else None,
    )


def derived_for(root: Path, change: ChangeRef) -> dict[str, Provider]:
    """Derived providers for ``change`` (execution.yaml replaces them by name in build_plan)."""
    ctx = load_context(root, change)
    return {name: provider for name, (provider, _) in derived_explained(ctx).items()}


def derived_explained(ctx: ChangeContext) -> dict[str, tuple[Provider, str]]:
    """Derived providers with their evidence, given the services execution.yaml declares."""
    from changeloop.detect.derive import attach_services, derive_explained  # noqa: PLC0415 - cycle: changeloop.detect.derive imports this package
    from changeloop.detect.pass_env import runner_pass_env  # noqa: PLC0415 - kept off a prove that derives nothing
    from changeloop.detect.quality_lanes import prefer_quality_lanes  # noqa: PLC0415 - cycle: changeloop.detect.quality_lanes imports this package

    found = derive_explained(ctx.evidence, ctx.repositories, ctx.detections)
    found = prefer_quality_lanes(ctx, found)  # quality/foundation-quality.json lanes
    found = {  # what each runner needs beyond the fixed environment (detect/pass_env.py)
        name: (replace(p, pass_env=runner_pass_env(p)), why) for name, (p, why) in found.items()
    }
    return attach_services(found, ctx.execution, ctx.repositories)

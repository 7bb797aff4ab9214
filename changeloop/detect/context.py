"""A change with everything bootstrap reads about it, and the wiring derived from it.

``derived_for`` is what ``prove`` calls to get derived wiring for a change;
``load_context`` is what ``evidence detect|init|doctor`` read.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from changeloop.detect import loading
from changeloop.detect.derive import attach_services, derivation_possible, derive_explained
from changeloop.detect.quality_lanes import prefer_quality_lanes
from changeloop.detect.repository import configured_for, detect_repository
from changeloop.detect.types import ChangeContext, Detection
from changeloop.model import Provider
from changeloop.workspace.changeref import ChangeRef

__all__ = ["derived_explained", "derived_for", "load_context"]


def load_context(
    root: Path, change: ChangeRef, *, only_if_derivable: bool = False
) -> ChangeContext:
    """The change's configuration and what each repository declares.

    ``only_if_derivable`` (prove): when ``derive.derivation_possible`` says nothing
    could be derived for this change, every repository's detections stay empty (no
    walk of the tree; ``derived_explained`` finds nothing either way).
    """
    evidence, execution = loading.load(root, change)
    repos = loading.repositories(root, evidence, execution)
    single = len(repos) == 1
    detections: dict[str, list[Detection]] = {name: [] for name in repos}
    unreadable: dict[str, tuple[str, ...]] = {}
    detect = True
    if only_if_derivable:
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
    from changeloop.detect.pass_env import runner_pass_env  # noqa: PLC0415 - kept off a prove that derives nothing

    found = derive_explained(ctx.evidence, ctx.repositories, ctx.detections)
    found = prefer_quality_lanes(ctx, found)  # quality/foundation-quality.json lanes
    found = {  # what each runner needs beyond the fixed environment (detect/pass_env.py)
        name: (replace(p, pass_env=runner_pass_env(p)), why) for name, (p, why) in found.items()
    }
    return attach_services(found, ctx.execution, ctx.repositories)

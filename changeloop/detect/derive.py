"""Derived wiring: the provider a careful engineer would write for each required capability.

Each derived provider asks its runner for a structured report under
``.changeloop/reports/`` so test-discovery reads counts and claim citations
instead of scraping text. Confidence is ``high`` when the framework came from
configuration or a manifest and ``low`` otherwise; ``evidence init --write``
only writes high-confidence providers. Frameworks already wired in
execution.yaml (detection source ``configured``) are not derived again.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from functools import partial
from pathlib import Path

from changeloop.detect.derived_names import REPORT_DIR, provider_name, test_provider
from changeloop.detect.repository import configured_detection, configured_for
from changeloop.detect.types import Detection
from changeloop.model import Evidence, Execution, Provider, Repository

UNIT_TYPES = ("python", "javascript", "rust")
TEST_CAPABILITIES = ("test", "discovery")


def required(evidence: Evidence, repositories: Mapping[str, Repository]) -> dict[str, list[str]]:
    """capability -> repositories that must pass it (change-level ``requires`` and claims)."""
    every = list(repositories)
    out: dict[str, list[str]] = {}

    def add(capability: str, repos: list[str]) -> None:
        bucket = out.setdefault(capability, [])
        bucket.extend(r for r in repos if r not in bucket)

    for capability, repos in evidence.requires.items():
        add(capability, list(repos) if repos else every)
    for claim in evidence.claims.values():
        for capability in claim.requires:
            add(capability, [claim.repository] if claim.repository else every)
    return out


def derive_explained(
    evidence: Evidence,
    repositories: Mapping[str, Repository],
    detections: Mapping[str, list[Detection]],
) -> dict[str, tuple[Provider, str]]:
    """Derived providers by name for every capability the change requires, each with the
    evidence (file and key) behind it."""
    # the runners' argv and the project's scripts: imported only when something is derived
    from changeloop.detect.runner_commands import playwright_command, test_command  # noqa: PLC0415 - only derivation needs the runner commands (10 modules)
    from changeloop.detect.script_providers import from_scripts  # noqa: PLC0415 - only derivation needs the script providers (12 modules)
    from changeloop.detect.static_analysis import static_providers  # noqa: PLC0415 - only derivation needs static analysis (10 modules)

    needs = required(evidence, repositories)
    single = len(repositories) == 1
    out: dict[str, tuple[Provider, str]] = {}
    for repo_name, repo in repositories.items():
        dets = [d for d in detections.get(repo_name, []) if d.detection_source != "configured"]
        configured_types = {
            d.test_type for d in detections.get(repo_name, []) if d.detection_source == "configured"
        }
        wants_tests = any(repo_name in needs.get(c, []) for c in TEST_CAPABILITIES)
        if wants_tests and not configured_types.intersection(UNIT_TYPES):
            first = True
            js = next((d for d in dets if d.test_type == "javascript"), None)
            scripted = from_scripts(js, repo_name, repo.path, single) if js else {}
            out.update({n: (_from(p, js), why) for n, (p, why) in scripted.items()})
            first = not scripted
            for det in (d for d in dets if d.test_type in UNIT_TYPES):
                if det is js and scripted:
                    continue
                extra = None if first else det.adapter
                provider = test_provider(
                    repo_name,
                    single,
                    extra,
                    partial(test_command, det, repo.path),
                    det.confidence,
                    format="unittest" if det.adapter == "unittest" else None,
                )
                out[provider.name] = (_from(provider, det), det.evidence)
                first = False
        wants_browser = any(repo_name in needs.get(c, []) for c in ("browser", "accessibility"))
        browser = next((d for d in dets if d.test_type == "browser"), None)
        if wants_browser and browser is not None and "browser" not in configured_types:
            name = provider_name("browser", repo_name, single)
            report = f"{REPORT_DIR}/{name}.json"
            outputs = ("accessibility",) if repo_name in needs.get("accessibility", []) else ()
            out[name] = (
                Provider(
                    name=name,
                    adapter="playwright",
                    capability="browser",
                    repository=repo_name,
                    command=playwright_command(repo.path),
                    report=report,
                    env={"PLAYWRIGHT_JSON_OUTPUT_NAME": report},
                    outputs=outputs,
                    origin="derived",
                    confidence=browser.confidence,
                    detected=(browser.detection_source, browser.version),
                ),
                browser.evidence,
            )
        if repo_name in needs.get("static-analysis", []):
            out.update(static_providers(repo_name, repo.path, single))
    return out


def _from(provider: Provider, det: Detection | None) -> Provider:
    """A derived provider that remembers where its framework was detected."""
    if det is None or provider.origin != "derived":
        return provider
    return dataclasses.replace(provider, detected=(det.detection_source, det.version))


def static_analysis_files(evidence: Evidence, repositories: Mapping[str, Repository]) -> list[Path]:
    """Every file whose bytes decide the derived static-analysis providers of the change."""
    needs = [
        r for r in required(evidence, repositories).get("static-analysis", []) if r in repositories
    ]
    if not needs:
        return []  # (the linters' readers are not even imported)
    from changeloop.detect.static_analysis import STATIC_ANALYSIS_FILES  # noqa: PLC0415 - only the no-change record's file list needs static analysis (10 modules)

    return [repositories[repo].path / name for repo in needs for name in STATIC_ANALYSIS_FILES]


def derivation_possible(
    evidence: Evidence,
    execution: Execution | None,
    repositories: Mapping[str, Repository],
    *,
    static_analysis: bool = True,
) -> bool:
    """Whether :func:`derive_explained` could derive anything here, whatever detection finds.

    Mirrors its conditions (keep the two together): tests for a repository with no
    configured unit runner, a browser capability with no configured browser runner,
    static analysis. When False, ``prove`` skips detection (a walk of the tree) and
    the no-change record may key the plan on its configuration alone.
    """
    needs = required(evidence, repositories)
    if static_analysis and needs.get("static-analysis"):
        return True  # ``static_analysis=False``: the caller observes STATIC_ANALYSIS_FILES
    single = len(repositories) == 1
    for repo in repositories:
        types = {
            found.test_type
            for p in configured_for(execution, repo, single)
            if (found := configured_detection(p)) is not None
        }
        if any(repo in needs.get(c, []) for c in TEST_CAPABILITIES) and not types & set(UNIT_TYPES):
            return True
        if any(repo in needs.get(c, []) for c in ("browser", "accessibility")) and (
            "browser" not in types
        ):
            return True
    return False


def attach_services(
    derived: Mapping[str, tuple[Provider, str]],
    execution: Execution | None,
    repositories: Mapping[str, Repository],
) -> dict[str, tuple[Provider, str]]:
    """Give derived Playwright providers the services declared for their repository.

    Services cannot be derived (reading a JS config's ``webServer`` would mean running
    it), but a service the user declared for the same repository is what the
    browser tests need; without it they would run against nothing.
    """
    if execution is None or not execution.services:
        return dict(derived)
    only = next(iter(repositories)) if len(repositories) == 1 else None
    out: dict[str, tuple[Provider, str]] = {}
    for name, (found, why) in derived.items():
        provider = found
        if provider.adapter == "playwright" and not provider.services:
            names = tuple(
                s.name
                for s in execution.services.values()
                if (s.repository or only) == provider.repository
            )
            if names:
                provider = dataclasses.replace(provider, services=names)
        out[name] = (provider, why)
    return out


__all__ = ["derive_explained", "required"]

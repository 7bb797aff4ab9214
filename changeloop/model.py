"""The typed plan: what the loaders produce and everything downstream reads.

No untyped dict travels past ``changeloop.config``; these frozen dataclasses
are the only shape configuration takes once validated.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from changeloop.errors import Location
from changeloop.marks import Document
from changeloop.workspace.changeref import ChangeRef

Status = Literal["pass", "fail", "inconclusive"]
ClaimMark = Literal["credited", "failed", "uncredited"]
SandboxMode = Literal["worktree", "copy", "none"]
InputMode = Literal["browser-automation", "os-input", "both"]
Origin = Literal["configured", "derived"]
Confidence = Literal["high", "low"]
Archetype = Literal["behavioral", "structural"]

KNOWN_CAPABILITIES = (
    "test",
    "discovery",
    "static-analysis",
    "browser",
    "accessibility",
    "cross-repo-contract",
    "review",
)
DEFAULT_TIMEOUT_MS = 30 * 60 * 1000
# The capability each adapter issues receipts for when the provider's name is not
# one (command's is the provider's name). Adapter modules read theirs from here.
ADAPTER_CAPABILITIES: Mapping[str, str] = {
    "test-discovery": "test",
    "playwright": "browser",
    "contract-digest": "cross-repo-contract",
    "external": "review",
    "mutation": "mutation",
}


def default_capability(name: str, adapter: str) -> str:
    """A provider's capability when none is written: its name if that is a known
    capability, else its adapter's own (the name again for ``command``)."""
    if name in KNOWN_CAPABILITIES:
        return name
    return ADAPTER_CAPABILITIES.get(adapter, name)


@dataclass(frozen=True)
class Claim:
    id: str
    statement: str | None = None
    requires: tuple[str, ...] = ()
    repository: str | None = None
    ref: str | None = None
    input_mode: InputMode | None = None
    location: Location | None = None
    archetype: Archetype = "behavioral"  # docs/grounding.md


@dataclass(frozen=True)
class Evidence:
    """evidence.yaml, version 3."""

    path: Path
    version: int
    repositories: Mapping[str, str]
    # capability -> repositories that must pass it; None means "every repository"
    requires: Mapping[str, tuple[str, ...] | None]
    claims: Mapping[str, Claim]
    declared_repositories: bool = False
    # The YAML marks of the file it was read from: preflight points at lines without re-reading.
    marks: Document | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class TrustedKey:
    """A key an ``external`` provider accepts signatures from."""

    role: Literal["ci", "authority"]
    name: str  # the CI issuer, or the authority's name
    public_key_pem: str
    source: str  # "inline" or the key file's path, for messages


@dataclass(frozen=True)
class Readiness:
    url: str
    port: int | None
    body: str | None = None
    body_regex: str | None = None
    header: tuple[str, str] | None = None
    timeout_ms: int = 30_000
    location: Location | None = None


@dataclass(frozen=True)
class Service:
    name: str
    repository: str | None
    command: tuple[str, ...]
    readiness: Readiness | None
    env: Mapping[str, str] = field(default_factory=dict)
    env_from: tuple[str, ...] = ()
    location: Location | None = None
    pass_env: tuple[str, ...] = ()  # names or globs of the caller's variables it gets


@dataclass(frozen=True)
class Repository:
    name: str
    path: Path  # absolute
    relpath: str  # as written in evidence.yaml
    setup: tuple[tuple[str, ...], ...] = ()
    entry_points: tuple[str, ...] = ()  # "file glob::function glob" (docs/grounding.md)


@dataclass(frozen=True)
class AdapterFacts:
    """What a provider's adapter says about it, settled once when the plan is built.

    The run reads these instead of asking the adapter registry again: which
    repositories its result depends on, the capabilities it issues receipts for,
    the command as run (with the flags the adapter injects), its adapter-specific
    wiring, and whether it runs a command at all.
    """

    repositories: tuple[str, ...]
    capabilities: tuple[str, ...]
    command: tuple[str, ...] | None
    inputs: Mapping[str, Any]
    runs_command: bool


@dataclass(frozen=True)
class Provider:
    """One wired adapter instance, with defaults resolved by ``changeloop.plan``."""

    name: str
    adapter: str
    capability: str
    repository: str | None = None
    command: tuple[str, ...] | None = None
    timeout_ms: int = DEFAULT_TIMEOUT_MS
    env: Mapping[str, str] = field(default_factory=dict)
    env_from: tuple[str, ...] = ()
    pass_env: tuple[str, ...] = ()  # names or globs of the caller's variables it gets
    resources: tuple[str, ...] = ()
    resources_declared: bool = False
    depends_on: tuple[str, ...] = ()
    services: tuple[str, ...] = ()
    inputs: tuple[str, ...] = ()
    artifacts: tuple[str, ...] = ()  # files it makes (paths or globs), kept with its cache entry
    claims: tuple[str, ...] = ()
    # test-discovery / playwright
    report: str | None = None
    format: str | None = None
    minimum: int = 1
    discovery_provider: str | None = None
    # playwright
    project: str | None = None
    outputs: tuple[str, ...] = ()
    input_mode: InputMode = "browser-automation"
    allow_flaky: bool = False
    # command
    envelope: bool = False
    # contract-digest: repository -> path inside it
    contract: Mapping[str, str] = field(default_factory=dict)
    # external
    trusted_keys: tuple[TrustedKey, ...] = ()
    issuer: str | None = None
    receipts: str | None = None
    max_age_s: int | None = None
    accepts: tuple[
        str, ...
    ] = ()  # providers whose prove-made receipts it accepts (docs/threat-model.md)
    # grounding (docs/grounding.md): the repository's entry points, copied by the plan onto the
    # providers whose result depends on them (test-discovery, mutation)
    entry_points: tuple[str, ...] = ()
    # mutation
    threshold: float | None = None
    max_mutants: int | None = None
    # a folder inside the repository the command runs in (a workspace member), or None
    workdir: str | None = None
    # provenance
    origin: Origin = "configured"
    confidence: Confidence = "high"
    # derived wiring: (detection_source, version) of the framework it was derived from
    detected: tuple[str, str | None] | None = None
    keys: frozenset[str] = frozenset()  # keys the user actually wrote
    location: Location | None = None
    # Settled by changeloop.plan.settle (None: an unknown adapter). A copy changed after
    # the plan is built must be settled again: the facts follow the fields they came from.
    facts: AdapterFacts | None = None

    @property
    def settled(self) -> AdapterFacts:
        """Its adapter facts; every provider of a built plan with a known adapter has them."""
        if self.facts is None:
            raise LookupError(f"provider {self.name!r}: its adapter facts were never settled")
        return self.facts


@dataclass(frozen=True)
class Execution:
    """execution.yaml, version 1 (before merging with derived wiring)."""

    path: Path
    version: int
    providers: Mapping[str, Provider]
    services: Mapping[str, Service]
    setup: Mapping[str, tuple[tuple[str, ...], ...]]
    entry_points: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    # repository -> location of its entryPoints key, for preflight messages
    entry_point_locations: Mapping[str, Location | None] = field(default_factory=dict)
    marks: Document | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class Plan:
    root: Path
    change: ChangeRef
    evidence: Evidence
    execution: Execution | None
    repositories: Mapping[str, Repository]
    providers: Mapping[str, Provider]  # in declaration order
    services: Mapping[str, Service]


@dataclass(frozen=True)
class ClaimScope:
    """What an adapter's ``read`` needs of the plan's claims, as data that travels in a Job."""

    requiring: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # capability -> ids
    known: tuple[str, ...] = ()  # every claim id the evidence declares
    os_input: tuple[str, ...] = ()  # claims whose inputMode needs OS input

    def claims_requiring(self, capability: str) -> tuple[str, ...]:
        return self.requiring.get(capability, ())


@dataclass(frozen=True)
class ContentIdentity:
    """What was proven: the git tree of the content (``openspec/`` left out)."""

    tree: str
    head: str | None
    dirty: bool

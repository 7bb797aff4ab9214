"""The records a prove hands between its stages and out to its callers.

Its options, typed events, per-provider reports, the result, and what a full run
observed beyond the plan (for the no-change record). They sit below every user.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

from changeloop.masking import Masker

if TYPE_CHECKING:  # the no-change answer imports these records, never the plan's model
    from changeloop.model import Plan, SandboxMode
    from changeloop.trust import Trust
    from changeloop.verdict import ReceiptView, Verdict

ProviderState = Literal["ran", "cached", "not-run"]
EventKind = Literal["queued", "waiting", "started", "cached", "finished", "skipped"]


@dataclass(frozen=True)
class ProveOptions:
    jobs: int = os.cpu_count() or 2
    jobs_given: bool = False  # --jobs on the command line: it caps a cluster's jobs in flight
    sandbox: SandboxMode = "none"
    fail_fast: bool = False
    use_cache: bool = True
    keep_sandbox: bool = False
    sign_key: Path | None = None
    issuer: str = "local"
    url: str | None = None
    executor: Literal["local", "dask"] = "local"
    dask_scheduler: str | None = None
    # TLS with a client certificate (docs/scale-out.md); None: Dask's distributed.comm.tls.* config
    dask_tls_ca_file: Path | None = None
    dask_tls_cert: Path | None = None
    dask_tls_key: Path | None = None
    dask_insecure: bool = False  # --dask-insecure: a cluster without TLS is accepted
    dask_worker_timeout: float = 30.0  # a worker silent this long (no heartbeat) is lost
    publish: Path | None = None  # --publish DIR (docs/scale-out.md)
    cache_from: Path | None = None  # --cache-from DIR
    # --trust-from / --trust-keyring: judged with a trust other than the checkout's, which
    # the no-change record does not key on (so such a run neither writes nor keeps one)
    own_trust: bool = False
    # Content trees already computed this invocation (checkout path -> tree), by the
    # no-change check that found them changed: the run starts from them.
    trees: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class RunEvent:
    """One step of a provider's life, for the views (live table, progress lines).

    ``detail``: the log its command writes (``started``; a cached provider is never
    started), the resource waited for (``waiting``), ``ok``/``failed``/``inconclusive``/
    ``no receipt`` (``finished``), or the reason (``skipped``); masked before it is sent.
    """

    provider: str
    kind: EventKind
    detail: str | None = None


EventSink = Callable[[RunEvent], None]


@dataclass(frozen=True)
class ReceiptEntry:
    capability: str
    provider: str
    status: str
    reason: str | None
    id: str
    path: str  # relative to the workspace root
    view: ReceiptView
    tests: dict[str, int] | None = None  # the receipt's test counts (prove --json, board)
    envelope: bytes = b""  # the signed DSSE envelope (run.writer puts it on disk)
    cached: bool = False  # reused byte for byte: its bytes are durable already
    observer: dict[str, str] | None = None  # the runner that observed it: {tool?, version?}


@dataclass(frozen=True)
class ProviderReport:
    """One provider's part of a run, as the run core returns it (sealed, not yet written)."""

    name: str
    adapter: str
    repository: str | None
    state: ProviderState = "not-run"
    origin: str | None = None  # a cached provider's: "local" (this machine) or "shared"
    duration_ms: int = 0
    reason: str | None = None
    receipts: tuple[ReceiptEntry, ...] = ()
    # capability -> why it has no receipt from this provider (the verdict's notes)
    notes: tuple[tuple[str, str], ...] = ()
    cache: bool = False  # every receipt passed and may be cached under its fingerprint


@dataclass
class ProveResult:
    plan: Plan
    run_id: str
    run_dir: Path
    providers: dict[str, ProviderReport]
    verdict: Verdict
    interrupted: bool = False
    masker: Masker = field(default_factory=lambda: Masker(()))
    notes: list[str] = field(default_factory=list)  # what --cache-from / --publish had to say
    observed: Observed | None = None  # what the run read beyond the plan (changeloop.nochange)
    trust: Trust | None = None  # where the external providers' keys came from (the CLI says)


class Observed(NamedTuple):
    """What a full run read from outside the plan, handed from the engine to :func:`remember`."""

    trees: Mapping[str, str]  # repository -> content tree the receipts name
    environments: Mapping[str, tuple[tuple[str, ...] | None, Path, Mapping[str, Any]]]
    fingerprints: Mapping[str, str]
    symlinks: Mapping[str, Sequence[str]]  # repository -> links in its content
    key: Any  # the workspace key that signed the run (None with --sign-key)
    state: Path
    # repository -> globs key -> inputs digest over its tree (run.carried), and whether
    # its content holds a submodule (then no digest is carried from the record)
    inputs: Mapping[str, Mapping[str, str]] = {}
    gitlinks: Mapping[str, bool] = {}
    # provider -> (passEnv, literal env): the environment its part was worked out in
    specs: Mapping[str, tuple[tuple[str, ...], tuple[tuple[str, str], ...]]] = {}
    # the change inputs digest and the paths left out of it (changeloop.fingerprints.wiring)
    change_inputs: tuple[str, tuple[str, ...]] | None = None
    # repository -> globs key -> ignored path -> digest (changeloop.fingerprints.ignored)
    ignored: Mapping[str, Mapping[str, Mapping[str, str]]] = {}

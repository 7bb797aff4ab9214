"""Receipts: in-toto Statement v1 + test-result predicate + the ``changeloop`` extension.

Usage::

    facts = ReceiptFacts(change="add-x", provider="test", adapter="command",
                         fingerprint="sha256:…", subjects={"self": ident}, sandbox="copy",
                         issuer="local", started=t0, finished=t1,
                         configuration=configuration_digests(plan, command))
    statement = build_statement(facts, outcome)     # its adapter-given values checked
    sealed = seal(statement, private_key)           # Sealed(id="sha256:…", envelope=b"{…}")
    write_atomic(path, sealed.envelope)

The payload is the RFC 8785 form of the statement and the receipt id is the
sha256 of those exact bytes (docs/receipts.md). ``result`` is ``PASSED`` only for
``pass``: a verifier that ignores the extension must never read a refusal or an
undecided run as an acceptance.

Schema checks: a statement built here comes from typed records, so sealing
checks only what the types cannot say (:func:`guard`: enums, patterns, a reason
unless pass) — microseconds, where the full JSON Schema took about a
millisecond per receipt. The full schema is checked on read from anywhere
untrusted (``verify.py``: import, gate, external, the cache's neighbours) and,
for every statement a real ``prove`` writes, by the test suite
(``tests/receipts/test_receipts_schema_every_statement.py``).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, NoReturn

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from changeloop import fsio
from changeloop.errors import ChangeloopError, Problem
from changeloop.model import ContentIdentity, Plan
from changeloop.outcome import Outcome
from changeloop.schemas import validate_named
from changeloop.signing.dsse import PAYLOAD_TYPE, sign_envelope
from changeloop.signing.jcs import canonicalize
from changeloop.signing.keys import signer_keyid
from changeloop.stamps import utc_stamp

STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
PREDICATE_TYPE = "https://in-toto.io/attestation/test-result/v0.1"
EXTENSION_SCHEMA = "changeloop/receipt@2"
SIGNED_ADAPTER = "signed"  # `receipt sign` sign-offs: no wiring ran, so `wiring` is null
LOG_TAIL_CHARS = 4000
LOG_TAIL_LINES = 40


@dataclass(frozen=True)
class ReceiptFacts:
    """Everything generic about one run that the engine (or ``receipt sign``) knows."""

    change: str
    provider: str
    adapter: str
    fingerprint: str  # "sha256:<hex>"
    subjects: Mapping[str, ContentIdentity]  # repository -> content identity
    sandbox: str  # worktree | copy | none
    issuer: str  # "local" or the CI issuer / authority name
    started: datetime
    finished: datetime
    configuration: Mapping[str, str] = field(default_factory=dict)  # name -> sha256 hex
    log_sha256: str | None = None
    log_tail: str = ""
    url: str | None = None
    # "sha256:<hex>" of the provider's wiring (changeloop.fingerprints.wiring); None for sign-offs
    wiring: str | None = None
    # where the command ran: {"kind": "local"} or {"kind": "dask", "worker": addr}
    executor: Mapping[str, str] | None = None


@dataclass(frozen=True)
class Sealed:
    id: str  # "sha256:<hex of payload>"
    envelope: bytes  # the DSSE envelope JSON, what gets written
    payload: bytes  # the JCS statement bytes that were signed
    keyid: str


class ReceiptSchemaError(ChangeloopError):
    """A statement changeloop built does not fit its own schema: a bug, reported loudly."""


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def configuration_digests(plan: Plan, command: Sequence[str] | None) -> dict[str, str]:
    """sha256 of evidence.yaml, execution.yaml (when present) and the effective command.

    The command is hashed as its RFC 8785 JSON array so the digest is reproducible.
    """
    out = {"evidence.yaml": sha256_hex(plan.evidence.path.read_bytes())}
    if plan.execution is not None and plan.execution.path.exists():
        out["execution.yaml"] = sha256_hex(plan.execution.path.read_bytes())
    if command is not None:
        out["command"] = sha256_hex(canonicalize(list(command)))
    return out


def bound_tail(text: str) -> str:
    """The last lines of a log, bounded in lines and characters."""
    lines = text.splitlines()[-LOG_TAIL_LINES:]
    tail = "\n".join(lines)
    return tail[-LOG_TAIL_CHARS:]


def build_statement(facts: ReceiptFacts, outcome: Outcome) -> dict[str, Any]:
    """The in-toto Statement for one outcome; raises if it would not fit the schema."""
    if not facts.subjects:
        raise ValueError("a receipt needs at least one repository subject")
    duration = max(0, round((facts.finished - facts.started).total_seconds() * 1000))
    observer = outcome.observer
    extension: dict[str, Any] = {
        "schema": EXTENSION_SCHEMA,
        "change": facts.change,
        "provider": outcome.provider or facts.provider,
        "adapter": facts.adapter,
        "capability": outcome.capability,
        "status": outcome.status,
        "reason": outcome.reason,
        "claims": dict(sorted(outcome.claims.items())),
        "fingerprint": facts.fingerprint,
        "wiring": facts.wiring,
        "command": list(outcome.command) if outcome.command is not None else None,
        "exitCode": outcome.exit_code,
        "tests": outcome.tests.to_json() if outcome.tests is not None else None,
        "findings": [f.to_json() for f in outcome.findings],
        "observer": {
            "adapter": observer.adapter if observer else facts.adapter,
            "tool": observer.tool if observer else None,
            "version": observer.version if observer else None,
        },
        "inputMode": outcome.input_mode,
        "sandbox": facts.sandbox,
        **({"executor": dict(facts.executor)} if facts.executor is not None else {}),
        "repositories": {
            repo: {"tree": ident.tree, "head": ident.head, "dirty": ident.dirty}
            for repo, ident in sorted(facts.subjects.items())
        },
        "issuer": facts.issuer,
        "startedOn": utc_stamp(facts.started),
        "finishedOn": utc_stamp(facts.finished),
        "durationMs": duration,
        "log": (
            {"sha256": facts.log_sha256, "tail": bound_tail(facts.log_tail)}
            if facts.log_sha256
            else None
        ),
    }
    if outcome.citations:  # docs/grounding.md
        extension["citations"] = {
            claim: [dict(c) for c in cites] for claim, cites in sorted(outcome.citations.items())
        }
    if outcome.mutation:
        extension["mutation"] = {
            claim: dict(score) for claim, score in sorted(outcome.mutation.items())
        }
    details = dict(outcome.details)
    if outcome.issuer is not None:
        details.setdefault("acceptedIssuer", outcome.issuer)
    if details:
        extension["details"] = details
    predicate: dict[str, Any] = {
        "result": "PASSED" if outcome.status == "pass" else "FAILED",
        "configuration": [
            {"name": name, "digest": {"sha256": digest}}
            for name, digest in sorted(facts.configuration.items())
        ],
        "passedTests": list(outcome.passed_tests),
        "failedTests": list(outcome.failed_tests),
        "changeloop": extension,
    }
    url = outcome.url or facts.url
    if url:
        predicate["url"] = url
    statement: dict[str, Any] = {
        "_type": STATEMENT_TYPE,
        "subject": [
            {"name": repo, "digest": {"gitTree": ident.tree}}
            for repo, ident in sorted(facts.subjects.items())
        ],
        "predicateType": PREDICATE_TYPE,
        "predicate": predicate,
    }
    guard(statement)
    return statement


_DIGEST = re.compile(r"sha256:[0-9a-f]{64}")
_TREE = re.compile(r"[0-9a-f]{40}(?:[0-9a-f]{24})?")
_CLAIM_STATES = frozenset({"credited", "failed", "uncredited"})
_INPUT_MODES = frozenset({"browser-automation", "os-input", "both", None})
_SANDBOXES = frozenset({"worktree", "copy", "none"})
_STATUSES = frozenset({"pass", "fail", "inconclusive"})


def guard(statement: Mapping[str, Any]) -> None:
    """Refuse to seal what the types let through and the schema forbids (cheap; see module doc).

    Strings an adapter chose (status, claim states, input mode), the reason a
    non-pass needs, and the digests that bind a receipt. Everything else has its
    shape by construction in :func:`build_statement`.
    """
    ext = statement["predicate"]["changeloop"]
    problem = None
    if ext["status"] not in _STATUSES:
        problem = f"status: {ext['status']!r} is not one of pass, fail, inconclusive"
    elif ext["status"] != "pass" and not ext.get("reason"):
        problem = f"reason: a {ext['status']} receipt needs a reason"
    elif any(v not in _CLAIM_STATES for v in ext["claims"].values()):
        bad = next(v for v in ext["claims"].values() if v not in _CLAIM_STATES)
        problem = f"claims: {bad!r} is not one of credited, failed, uncredited"
    elif ext["inputMode"] not in _INPUT_MODES:
        problem = f"inputMode: {ext['inputMode']!r} is not an input mode"
    elif ext["sandbox"] not in _SANDBOXES:
        problem = f"sandbox: {ext['sandbox']!r} is not worktree, copy or none"
    elif not _DIGEST.fullmatch(ext["fingerprint"]):
        problem = f"fingerprint: {ext['fingerprint']!r} is not sha256:<64 hex>"
    elif ext["wiring"] is not None and not _DIGEST.fullmatch(ext["wiring"]):
        problem = f"wiring: {ext['wiring']!r} is not sha256:<64 hex>"
    elif not all(_TREE.fullmatch(r["tree"]) for r in ext["repositories"].values()):
        problem = "repositories: a tree is not a git object id"
    elif not all(ext[k] for k in ("change", "provider", "adapter", "capability", "issuer")):
        problem = "change, provider, adapter, capability and issuer must not be empty"
    if problem is not None:
        _refuse(problem)


def extension_problem(extension: Any) -> str | None:
    """None when ``extension`` fits schemas/receipt-extension.json, else the first problem."""
    return validate_named("receipt-extension.json", extension)


def _refuse(problem: str) -> NoReturn:
    raise ReceiptSchemaError(
        Problem(
            code="receipt_schema",
            message=f"refusing to seal a receipt that does not fit its schema: {problem}",
            fix="this is a changeloop bug; please report it with the command you ran",
        ),
        exit_code=3,
    )


def seal(statement: Mapping[str, Any], private_key: Ed25519PrivateKey) -> Sealed:
    """Canonicalize, sign, and wrap: the id is sha256 of the exact payload bytes.

    ``statement`` comes from :func:`build_statement`, which guarded it (:func:`guard`).
    """
    payload = canonicalize(statement)
    envelope = sign_envelope(payload, PAYLOAD_TYPE, private_key)
    return Sealed(
        id="sha256:" + sha256_hex(payload),
        envelope=envelope,
        payload=payload,
        keyid=signer_keyid(private_key),
    )


def write_atomic(path: Path, data: bytes, *, durable: bool = True) -> None:
    """Write, fsync, rename, fsync the directory: no half file is ever visible under ``path``.

    ``durable=False`` skips the fsyncs for copies of bytes already durable
    elsewhere (a cached receipt re-listed in a run); the rename still makes the
    write all-or-nothing. The temporary file is created exclusively, so a
    symlink planted beside ``path`` is never written through (docs/threat-model.md).
    """
    fsio.write_atomic(path, data, durable=durable)

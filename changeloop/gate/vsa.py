"""A signed SLSA Verification Summary Attestation over one change (docs/verbs/gate.md).

Usage::

    result = gate.evaluate(trust.apply(plan), trust.command_line)   # what the receipts say now
    statement = build_vsa(result, trust, version="0.1.0")  # in-toto Statement v1, VSA v1
    sealed = seal_vsa(statement, private_key)               # DSSE, Ed25519, JCS payload
    verified = verify_vsa(sealed.envelope, [public_key])

The VSA says what :mod:`changeloop.gate` decided, in a form SLSA tooling
reads (docs/verbs/summary.md): the subjects are the repositories' content
trees; ``resourceUri`` names the repository (its remote URL) and the change;
the ``policy`` is ``evidence.yaml`` by digest, with every policy file
(``evidence.yaml``, ``execution.yaml``) by digest and the trust it was judged
under (source, key ids) in its ``annotations``; ``inputAttestations`` are
exactly the receipts the verdict weighed, and ``predicate.changeloop.setAside``
the ones read and not weighed, each with its reason. ``verificationResult`` is
``PASSED`` only when the change is proven; ``verifiedLevels`` is ``["FAILED"]``
when it is not and empty otherwise (changeloop judges claims, not SLSA build
levels).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from changeloop.gate import GateResult
from changeloop.gate.resource_uri import resource_uri
from changeloop.git.identity import content_identity
from changeloop.plan import display_path
from changeloop.signing.dsse import (
    PAYLOAD_TYPE,
    VerificationError,
    loads_strict,
    parse_envelope,
    sign_envelope,
    verify_signatures,
)
from changeloop.signing.jcs import canonicalize
from changeloop.signing.keys import keyid
from changeloop.signing.statement import STATEMENT_TYPE, Sealed, sha256_hex
from changeloop.signing.verify import parse_time
from changeloop.stamps import utc_stamp

if TYPE_CHECKING:
    from changeloop.model import Plan
    from changeloop.trust import Trust

VSA_TYPE = "https://slsa.dev/verification_summary/v1"
EXTENSION = "changeloop"  # predicate.changeloop, as in receipts: what changeloop itself adds
EXTENSION_SCHEMA = "changeloop/vsa@1"
TRUST_SOURCES = ("rev", "keyring", "command-line", "checkout")
SET_ASIDE_CODES = (
    "stale-content",
    "stale-wiring",
    "unverified",
    "superseded",
)
MAX_ENVELOPE_BYTES = 4 * 1024 * 1024
_HEX40 = re.compile(r"^[0-9a-f]{40}([0-9a-f]{24})?$")
_HEX64 = re.compile(r"^[0-9a-f]{64}$")


def verifier_id(version: str) -> str:
    return f"pkg:pypi/changeloop@{version}"


def subject_trees(result: GateResult) -> dict[str, str]:
    """Content trees of the change's repositories, in the mode its kept receipts used.

    Receipts of one sandbox mode ⇒ that mode's trees; otherwise (none kept, or a
    mix) tracked + untracked files, the default ``prove`` sandbox sees.
    """
    modes = {k.verified.extension.get("sandbox") == "worktree" for k in result.kept}
    include_untracked = modes != {True}
    known = result.trees.get(include_untracked, {})
    out: dict[str, str] = {}
    for name, repo in sorted(result.plan.repositories.items()):
        tree = known.get(name)
        if tree is None:
            tree = content_identity(repo.path, include_untracked=include_untracked).tree
        out[name] = tree
    return out


def build_vsa(
    result: GateResult, trust: Trust, *, version: str, now: datetime | None = None
) -> dict[str, Any]:
    """The VSA statement of what ``result`` decided, with ``trust`` it was judged under."""
    plan = result.plan
    policy_uri = display_path(plan.root, plan.evidence.path)
    files = _policy_files(plan)
    weighed = {k.envelope.uri for k in result.kept}
    predicate: dict[str, Any] = {
        "verifier": {"id": verifier_id(version)},
        "timeVerified": utc_stamp(now or datetime.now(UTC)),
        "resourceUri": resource_uri(plan),
        "policy": {
            "uri": policy_uri,
            "digest": dict(files[policy_uri]),
            "annotations": {"files": files, "trust": trust.to_json()},
        },
        # Exactly the receipts the verdict weighed; the rest are in the extension below.
        "inputAttestations": [
            {"uri": env.uri, "digest": {"sha256": env.sha256}}
            for env in sorted(result.read, key=lambda e: e.uri)
            if env.uri in weighed
        ],
        "verificationResult": "PASSED" if result.proven else "FAILED",
        "verifiedLevels": [] if result.proven else ["FAILED"],
        EXTENSION: {
            "schema": EXTENSION_SCHEMA,
            "change": plan.change.id,
            "setAside": _set_aside(result, weighed),
        },
    }
    statement: dict[str, Any] = {
        "_type": STATEMENT_TYPE,
        "subject": [
            {"name": name, "digest": {"gitTree": tree}}
            for name, tree in subject_trees(result).items()
        ],
        "predicateType": VSA_TYPE,
        "predicate": predicate,
    }
    problem = shape_problem(statement)
    if problem is not None:  # our own output must fit what verify_vsa demands
        raise ValueError(f"refusing to sign a VSA that does not fit its shape: {problem}")
    return statement


def _policy_files(plan: Plan) -> dict[str, dict[str, str]]:
    """evidence.yaml and execution.yaml (when the change has one), each by its sha256."""
    paths = [plan.evidence.path]
    execution = plan.change.path / "execution.yaml"
    if plan.execution is not None or execution.is_file():
        paths.append(plan.execution.path if plan.execution is not None else execution)
    return {
        display_path(plan.root, path): {"sha256": sha256_hex(path.read_bytes())} for path in paths
    }


def _set_aside(result: GateResult, weighed: set[str]) -> list[dict[str, Any]]:
    """Every envelope read and not weighed: set aside (with gate's reason) or superseded."""
    out: list[dict[str, Any]] = []
    for s in result.set_aside:
        digest = {"sha256": s.envelope.sha256} if s.envelope.sha256 else None
        out.append({"uri": s.envelope.uri, "digest": digest, "code": s.code, "message": s.message})
    said = {s.envelope.uri for s in result.set_aside}
    for env in result.read:
        if env.uri not in weighed and env.uri not in said:
            out.append(
                {
                    "uri": env.uri,
                    "digest": {"sha256": env.sha256},
                    "code": "superseded",
                    "message": f"{env.uri}: a newer receipt of the same provider and capability"
                    " was weighed instead",
                }
            )
    return sorted(out, key=lambda item: (item["uri"], item["code"]))


def seal_vsa(statement: dict[str, Any], key: Ed25519PrivateKey) -> Sealed:
    payload = canonicalize(statement)
    return Sealed(
        id="sha256:" + sha256_hex(payload),
        envelope=sign_envelope(payload, PAYLOAD_TYPE, key),
        payload=payload,
        keyid=keyid(key.public_key()),
    )


# -- verification -------------------------------------------------------------
@dataclass(frozen=True)
class VerifiedVSA:
    id: str
    keyid: str
    statement: dict[str, Any]

    @property
    def predicate(self) -> dict[str, Any]:
        predicate: dict[str, Any] = self.statement["predicate"]
        return predicate

    @property
    def result(self) -> str:
        return str(self.predicate["verificationResult"])

    @property
    def change(self) -> str:
        return str(self.predicate[EXTENSION]["change"])

    @property
    def set_aside(self) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = self.predicate[EXTENSION]["setAside"]
        return found

    @property
    def subjects(self) -> dict[str, str]:
        return {s["name"]: s["digest"]["gitTree"] for s in self.statement["subject"]}


def claims_to_be_vsa(data: bytes) -> bool:
    """Whether an envelope *says* it carries a VSA (unauthenticated: only for dispatch;
    :func:`verify_vsa` then checks everything)."""
    if len(data) > MAX_ENVELOPE_BYTES:
        return False  # the receipt path refuses it by size
    try:
        payload = loads_strict(parse_envelope(data).payload, "payload")
    except (VerificationError, RecursionError):
        return False
    return isinstance(payload, dict) and payload.get("predicateType") == VSA_TYPE


def _digest_problem(
    where: str, digest: Any, algorithm: str, pattern: re.Pattern[str]
) -> str | None:
    if not isinstance(digest, dict) or set(digest) != {algorithm}:
        return f"{where}.digest must be {{{algorithm!r}: …}}"
    if not isinstance(digest[algorithm], str) or not pattern.match(digest[algorithm]):
        return f"{where}.digest.{algorithm} is not a lowercase hex digest"
    return None


def shape_problem(statement: Any) -> str | None:
    """None when ``statement`` is a changeloop VSA of the shape docs/design.md fixes."""
    if not isinstance(statement, dict):
        return "the signed payload is not a JSON object"
    if statement.get("_type") != STATEMENT_TYPE:
        return f"_type is {statement.get('_type')!r}, expected {STATEMENT_TYPE!r}"
    if statement.get("predicateType") != VSA_TYPE:
        return f"predicateType is {statement.get('predicateType')!r}, expected {VSA_TYPE!r}"
    subjects = statement.get("subject")
    if not isinstance(subjects, list) or not subjects:
        return "subject must be a non-empty list"
    names = []
    for i, s in enumerate(subjects):
        if not isinstance(s, dict) or not isinstance(s.get("name"), str):
            return f"subject[{i}] must be an object with a name"
        problem = _digest_problem(f"subject[{i}]", s.get("digest"), "gitTree", _HEX40)
        if problem:
            return problem
        names.append(s["name"])
    if len(set(names)) != len(names):
        return "a subject is named more than once"
    p = statement.get("predicate")
    if not isinstance(p, dict):
        return "predicate must be an object"
    verifier = p.get("verifier")
    if not isinstance(verifier, dict) or not str(verifier.get("id", "")).startswith(
        "pkg:pypi/changeloop@"
    ):
        return "predicate.verifier.id must be pkg:pypi/changeloop@<version>"
    try:
        parse_time(str(p.get("timeVerified")))
    except ValueError:
        return "predicate.timeVerified is not an RFC 3339 time"
    problem = _extension_problem(p.get(EXTENSION))
    if problem:
        return problem
    change = p[EXTENSION]["change"]
    uri = p.get("resourceUri")
    if not isinstance(uri, str) or not uri or change not in uri:
        return f"predicate.resourceUri must name the repository and change {change}"
    problem = _policy_problem(p.get("policy"))
    if problem:
        return problem
    inputs = p.get("inputAttestations")
    if not isinstance(inputs, list):
        return "predicate.inputAttestations must be a list"
    for i, item in enumerate(inputs):
        if not isinstance(item, dict) or not isinstance(item.get("uri"), str):
            return f"predicate.inputAttestations[{i}] must be an object with a uri"
        problem = _digest_problem(
            f"predicate.inputAttestations[{i}]", item.get("digest"), "sha256", _HEX64
        )
        if problem:
            return problem
    result = p.get("verificationResult")
    if result not in ("PASSED", "FAILED"):
        return "predicate.verificationResult must be PASSED or FAILED"
    levels = [] if result == "PASSED" else ["FAILED"]
    if p.get("verifiedLevels") != levels:
        return (
            f"predicate.verifiedLevels must be {levels} for {result} (changeloop claims no SLSA"
            " build level; a failed verification says FAILED, as SLSA VSA v1 has it)"
        )
    return None


def _policy_problem(policy: Any) -> str | None:
    """evidence.yaml by digest, every policy file by digest, and the trust it was judged by."""
    if not isinstance(policy, dict) or not isinstance(policy.get("uri"), str):
        return "predicate.policy must be an object with a uri"
    if not policy["uri"].endswith("evidence.yaml"):
        return "predicate.policy.uri must name the change's evidence.yaml"
    problem = _digest_problem("predicate.policy", policy.get("digest"), "sha256", _HEX64)
    if problem:
        return problem
    notes = policy.get("annotations")
    files = notes.get("files") if isinstance(notes, dict) else None
    if not isinstance(files, dict) or files.get(policy["uri"]) != policy["digest"]:
        return "predicate.policy.annotations.files must hold evidence.yaml's digest"
    for uri, digest in files.items():
        where = f"predicate.policy.annotations.files[{uri!r}]"
        problem = _digest_problem(where, digest, "sha256", _HEX64)
        if problem:
            return problem
    trust = notes.get("trust") if isinstance(notes, dict) else None
    if not isinstance(trust, dict) or trust.get("source") not in TRUST_SOURCES:
        return "predicate.policy.annotations.trust must name the trust source"
    keys = trust.get("keys")
    if not isinstance(keys, list) or not all(isinstance(k, str) and _HEX64.match(k) for k in keys):
        return "predicate.policy.annotations.trust.keys must list the trusted key ids"
    return None


def _extension_problem(ext: Any) -> str | None:
    """``predicate.changeloop``: the change, and the envelopes read but not weighed."""
    if not isinstance(ext, dict) or ext.get("schema") != EXTENSION_SCHEMA:
        return f"predicate.{EXTENSION}.schema must be {EXTENSION_SCHEMA}"
    change = ext.get("change")
    if not isinstance(change, str) or not change:
        return f"predicate.{EXTENSION}.change must name the change"
    aside = ext.get("setAside")
    if not isinstance(aside, list):
        return f"predicate.{EXTENSION}.setAside must be a list"
    for i, item in enumerate(aside):
        where = f"predicate.{EXTENSION}.setAside[{i}]"
        if not isinstance(item, dict) or not isinstance(item.get("uri"), str):
            return f"{where} must be an object with a uri"
        if item.get("digest") is not None:
            problem = _digest_problem(where, item["digest"], "sha256", _HEX64)
            if problem:
                return problem
        if item.get("code") not in SET_ASIDE_CODES or not isinstance(item.get("message"), str):
            return f"{where} must carry a code ({', '.join(SET_ASIDE_CODES)}) and a message"
    return None


def verify_vsa(data: bytes, keys: Sequence[Ed25519PublicKey]) -> VerifiedVSA:
    """Signature first, then only the verified bytes: payloadType, JCS form, shape."""
    if len(data) > MAX_ENVELOPE_BYTES:
        raise VerificationError("size", "the envelope is larger than 4 MiB; refused")
    try:
        return _verify_vsa(data, keys)
    except RecursionError:
        raise VerificationError("json", "the envelope nests too deeply; refused") from None


def _verify_vsa(data: bytes, keys: Sequence[Ed25519PublicKey]) -> VerifiedVSA:
    envelope = parse_envelope(data)
    payload, key = verify_signatures(envelope, list(keys))
    if envelope.payload_type != PAYLOAD_TYPE:
        raise VerificationError(
            "payloadType",
            f"payloadType is {envelope.payload_type!r}, expected exactly {PAYLOAD_TYPE!r}",
        )
    statement = loads_strict(payload, "the signed statement")
    if canonicalize(statement) != payload:
        raise VerificationError("payload", "the signed payload is not in its RFC 8785 form")
    problem = shape_problem(statement)
    if problem is not None:
        raise VerificationError("statement", problem)
    return VerifiedVSA(
        id="sha256:" + hashlib.sha256(payload).hexdigest(), keyid=keyid(key), statement=statement
    )

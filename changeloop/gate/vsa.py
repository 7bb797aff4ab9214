"""A signed SLSA Verification Summary Attestation over one change (DESIGN.md §12).

Usage::

    result = gate.evaluate(plan, keys)                 # what the receipts say now
    statement = build_vsa(result, version="0.1.0")     # in-toto Statement v1, VSA v1 predicate
    sealed = seal_vsa(statement, private_key)          # DSSE, Ed25519, JCS payload
    verified = verify_vsa(sealed.envelope, [public_key])

The VSA says what :mod:`changeloop.gate` decided, in a form SLSA tooling
reads: the subjects are the repositories' content trees, the policy is the
change's ``evidence.yaml`` (by digest), and ``inputAttestations`` digest every
envelope file gate read — including the ones it set aside, so a reader can see
exactly what was weighed. ``verificationResult`` is ``PASSED`` only when the
change is proven; ``verifiedLevels`` stays empty (changeloop judges claims, not
SLSA build levels).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from changeloop.gate import GateResult
from changeloop.signing.dsse import (
    PAYLOAD_TYPE,
    VerificationError,
    loads_strict,
    parse_envelope,
    verify_signatures,
)
from changeloop.signing.jcs import canonicalize
from changeloop.signing.keys import keyid
from changeloop.signing.statement import STATEMENT_TYPE, Sealed, rfc3339, sha256_hex
from changeloop.signing.verify import parse_time

VSA_TYPE = "https://slsa.dev/verification_summary/v1"
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
    from changeloop.git.identity import content_identity

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


def build_vsa(result: GateResult, *, version: str, now: datetime | None = None) -> dict[str, Any]:
    plan = result.plan
    evidence = plan.evidence.path.read_bytes()
    predicate: dict[str, Any] = {
        "verifier": {"id": verifier_id(version)},
        "timeVerified": rfc3339(now or datetime.now(UTC)),
        "resourceUri": f"openspec-change:{plan.change.id}",
        "policy": {
            "uri": f"openspec/changes/{plan.change.id}/evidence.yaml",
            "digest": {"sha256": sha256_hex(evidence)},
        },
        "inputAttestations": [
            {"uri": env.uri, "digest": {"sha256": env.sha256}}
            for env in sorted(result.read, key=lambda e: e.uri)
        ],
        "verificationResult": "PASSED" if result.proven else "FAILED",
        "verifiedLevels": [],
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


def seal_vsa(statement: dict[str, Any], key: Ed25519PrivateKey) -> Sealed:
    from changeloop.signing.dsse import sign_envelope

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
        return str(self.predicate["resourceUri"]).removeprefix("openspec-change:")

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
    """None when ``statement`` is a changeloop VSA of the shape DESIGN.md §13 fixes."""
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
    uri = p.get("resourceUri")
    if (
        not isinstance(uri, str)
        or not uri.startswith("openspec-change:")
        or uri == ("openspec-change:")
    ):
        return "predicate.resourceUri must be openspec-change:<id>"
    change = uri.removeprefix("openspec-change:")
    policy = p.get("policy")
    if not isinstance(policy, dict) or policy.get("uri") != (
        f"openspec/changes/{change}/evidence.yaml"
    ):
        return f"predicate.policy.uri must be openspec/changes/{change}/evidence.yaml"
    problem = _digest_problem("predicate.policy", policy.get("digest"), "sha256", _HEX64)
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
    if p.get("verificationResult") not in ("PASSED", "FAILED"):
        return "predicate.verificationResult must be PASSED or FAILED"
    if p.get("verifiedLevels") != []:
        return "predicate.verifiedLevels must be empty (changeloop claims no SLSA level)"
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

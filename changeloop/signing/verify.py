"""Receipt verification in the fixed order of docs/receipts.md.

Usage::

    verified = verify_envelope(data, [Trusted(pub, issuer="github-actions")],
                               Expectation(change="add-x", trees={"web": "3f2a…"}))
    verified.status      # "pass" | "fail" | "inconclusive"

Order: parse rejecting duplicate keys → base64 → PAE → Ed25519 (keyid checked)
→ exact payloadType → parse only the verified bytes → ``_type``/predicateType
(+ extension schema) → bindings (change, content gitTree, claims, provider,
issuer) → time window → result. The first failure raises
:class:`VerificationError` naming its check with a reason the user can act on.
A valid ``FAILED`` receipt is *valid*: deciding what it means is the caller's job.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from changeloop.signing.dsse import (
    PAYLOAD_TYPE,
    VerificationError,
    decode_utf8,
    loads_strict,
    parse_envelope,
    verify_signatures,
)
from changeloop.signing.jcs import CanonicalizationError, canonicalize
from changeloop.signing.keys import keyid
from changeloop.signing.statement import (
    PREDICATE_TYPE,
    STATEMENT_TYPE,
    extension_problem,
    sha256_hex,
)

__all__ = [
    "Expectation",
    "Trusted",
    "VerificationError",
    "Verified",
    "age_problem",
    "verify_envelope",
]

DEFAULT_SKEW = timedelta(minutes=5)


@dataclass(frozen=True)
class Trusted:
    """A public key, optionally bound to the issuer name its statements must carry."""

    key: Ed25519PublicKey
    issuer: str | None = None


@dataclass(frozen=True)
class Expectation:
    """What the receipt must be bound to; ``None`` fields are not checked."""

    change: str | None = None
    trees: Mapping[str, str] | None = None  # repository -> current content gitTree
    claims: tuple[str, ...] = ()
    provider: str | None = None
    issuer: str | None = None
    now: datetime | None = None  # default: the current time
    max_age_s: int | None = None
    skew: timedelta = DEFAULT_SKEW


@dataclass(frozen=True)
class Verified:
    id: str  # "sha256:<hex of payload>"
    payload: bytes  # the verified bytes
    statement: dict[str, Any]
    extension: dict[str, Any]
    keyid: str
    result: str  # PASSED | FAILED
    status: str  # pass | fail | inconclusive
    claims: Mapping[str, str] = field(default_factory=dict)

    @property
    def issuer(self) -> str:
        return str(self.extension["issuer"])

    @property
    def finished(self) -> datetime:
        return parse_time(str(self.extension["finishedOn"]))

    @property
    def subjects(self) -> dict[str, str]:
        """Repository -> gitTree as the *signed statement's* subjects name them."""
        return _subject_trees(self.statement)


def short(value: str | None) -> str:
    return f"{value[:7]}…" if value else "(unknown)"


def parse_time(text: str) -> datetime:
    moment = datetime.fromisoformat(text)
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def verify_envelope(
    data: bytes,
    keys: Sequence[Ed25519PublicKey | Trusted],
    expect: Expectation | None = None,
) -> Verified:
    """Verify ``data`` (envelope JSON bytes) against ``keys`` and ``expect``."""
    expect = expect or Expectation()
    trusted = [k if isinstance(k, Trusted) else Trusted(k) for k in keys]
    envelope = parse_envelope(data)  # json (duplicates refused) + base64 + zero signatures
    payload, key = verify_signatures(envelope, [t.key for t in trusted])  # PAE + Ed25519
    kid = keyid(key)
    # Issuers this key is trusted for; a key trusted without an issuer binds none.
    names = [t.issuer for t in trusted if keyid(t.key) == kid]
    signer_issuers = None if None in names else sorted({n for n in names if n})
    if envelope.payload_type != PAYLOAD_TYPE:
        raise VerificationError(
            "payloadType",
            f"payloadType is {envelope.payload_type!r}, expected exactly {PAYLOAD_TYPE!r}",
        )
    statement = parse_payload(payload)  # only verified bytes, and only their canonical form
    extension = _check_statement(statement)
    _check_bindings(statement, extension, expect, signer_issuers)
    _check_time(extension, expect)
    result = statement["predicate"]["result"]
    status = extension["status"]
    if (result == "PASSED") != (status == "pass"):
        raise VerificationError(
            "result",
            f"predicate.result {result} contradicts the changeloop status {status!r};"
            " the receipt is inconsistent and is refused",
        )
    return Verified(
        id="sha256:" + sha256_hex(payload),
        payload=payload,
        statement=statement,
        extension=extension,
        keyid=kid,
        result=result,
        status=status,
        claims=dict(extension["claims"]),
    )


def parse_payload(payload: bytes) -> Any:
    """The verified payload as JSON, refusing any byte sequence but its own RFC 8785 form.

    changeloop signs only canonical UTF-8 statements (the receipt id hashes those
    bytes). Accepting another spelling of the same statement — a BOM, UTF-16,
    other key order, whitespace, escapes, ``1.0`` for ``1`` — would give one
    statement several ids, and lets a reader that parses differently see
    different fields; so a signed payload that is not canonical is refused.
    """
    text = decode_utf8(payload, "the signed payload", check="payload")
    statement = loads_strict(text, "the signed statement")
    try:
        canonical = canonicalize(statement)
    except CanonicalizationError as exc:
        raise VerificationError(
            "payload", f"the signed statement has no RFC 8785 form: {ascii(str(exc))[:120]}"
        ) from None
    if canonical != payload:
        at = next(
            (i for i, (a, b) in enumerate(zip(canonical, payload, strict=False)) if a != b),
            min(len(canonical), len(payload)),
        )
        raise VerificationError(
            "payload",
            f"the signed payload is not in its RFC 8785 (JCS) form (first difference at byte"
            f" {at}); changeloop signs only canonical UTF-8 statements, so these bytes were"
            " not written by changeloop — have the issuer sign the canonical form",
        )
    return statement


def _check_statement(statement: Any) -> dict[str, Any]:
    if not isinstance(statement, dict):
        raise VerificationError("statement", "the signed payload is not a JSON object")
    if statement.get("_type") != STATEMENT_TYPE:
        raise VerificationError(
            "statement", f"_type is {statement.get('_type')!r}, expected {STATEMENT_TYPE!r}"
        )
    if statement.get("predicateType") != PREDICATE_TYPE:
        raise VerificationError(
            "statement",
            f"predicateType is {statement.get('predicateType')!r}, expected {PREDICATE_TYPE!r}",
        )
    predicate = statement.get("predicate")
    subjects = statement.get("subject")
    if not isinstance(predicate, dict) or predicate.get("result") not in ("PASSED", "FAILED"):
        raise VerificationError("statement", "predicate.result must be PASSED or FAILED")
    if not isinstance(subjects, list) or not all(isinstance(s, dict) for s in subjects):
        raise VerificationError("statement", "subject must be a list of objects")
    if not subjects:
        raise VerificationError("statement", "the statement names no subject: it proves nothing")
    names = [s.get("name") for s in subjects]
    repeated = sorted({str(n) for n in names if names.count(n) > 1})
    if repeated:
        raise VerificationError(
            "statement", f"subject {', '.join(repeated)} is named more than once"
        )
    extension = predicate.get("changeloop")
    problem = extension_problem(extension)
    if problem is not None:
        raise VerificationError(
            "statement", f"predicate.changeloop does not fit changeloop/receipt@1: {problem}"
        )
    assert isinstance(extension, dict)
    for key in ("startedOn", "finishedOn"):
        try:
            parse_time(extension[key])
        except ValueError:
            raise VerificationError(
                "statement",
                f"predicate.changeloop.{key} {extension[key]!r} is not a valid RFC 3339 time",
            ) from None
    return extension


def _subject_trees(statement: dict[str, Any]) -> dict[str, str]:
    trees: dict[str, str] = {}
    for subject in statement["subject"]:
        name, digest = subject.get("name"), subject.get("digest")
        if isinstance(name, str) and isinstance(digest, dict):
            tree = digest.get("gitTree")
            if isinstance(tree, str):
                trees[name] = tree
    return trees


def _check_bindings(
    statement: dict[str, Any],
    ext: dict[str, Any],
    expect: Expectation,
    signer_issuers: list[str] | None,
) -> None:
    if expect.change is not None and ext["change"] != expect.change:
        raise VerificationError(
            "change",
            f"receipt is for change {ext['change']!r}, not {expect.change!r};"
            " it cannot speak for this change",
        )
    if expect.trees is not None:
        trees = _subject_trees(statement)
        for repo, current in sorted(expect.trees.items()):
            made = trees.get(repo)
            if made is None:
                covered = ", ".join(sorted(trees)) or "nothing"
                raise VerificationError(
                    "content",
                    f"receipt names no content for repository {repo!r} (it covers {covered});"
                    " issue one that covers every repository of this change",
                )
            if made != current:
                head = (ext["repositories"].get(repo) or {}).get("head")
                raise VerificationError(
                    "content",
                    f"receipt was made for content {short(made)} (commit {short(head)}) of"
                    f" {repo!r}, this change's content is {short(current)}; prove or sign"
                    " again for the current content",
                )
    missing = [c for c in expect.claims if c not in ext["claims"]]
    if not missing and ext["status"] == "pass":
        missing = [c for c in expect.claims if ext["claims"][c] != "credited"]
    if missing:
        has = ", ".join(sorted(ext["claims"])) or "none"
        raise VerificationError(
            "claims",
            f"receipt does not credit claim(s) {', '.join(missing)} (it covers: {has});"
            " issue it with those claims",
        )
    if expect.provider is not None and ext["provider"] != expect.provider:
        raise VerificationError(
            "provider",
            f"receipt was issued by provider {ext['provider']!r}, not {expect.provider!r}",
        )
    if expect.issuer is not None and ext["issuer"] != expect.issuer:
        raise VerificationError(
            "issuer",
            f"receipt names issuer {ext['issuer']!r}, this provider expects issuer"
            f" {expect.issuer!r}; sign with --issuer {expect.issuer}",
        )
    if signer_issuers is not None and ext["issuer"] not in signer_issuers:
        raise VerificationError(
            "issuer",
            f"receipt names issuer {ext['issuer']!r}, but the key that signed it is trusted"
            f" only for issuer {' or '.join(repr(n) for n in signer_issuers)}",
        )


def _check_time(ext: dict[str, Any], expect: Expectation) -> None:
    now = expect.now or datetime.now(UTC)
    finished = parse_time(ext["finishedOn"])
    if finished > now + expect.skew:
        ahead = finished - now
        raise VerificationError(
            "time",
            f"receipt finished at {ext['finishedOn']}, {_span(ahead)} in the future (allowed"
            f" clock skew {_span(expect.skew)}); check the issuer's clock",
        )
    if expect.max_age_s is not None:
        too_old = age_problem(ext["finishedOn"], expect.max_age_s, now)
        if too_old is not None:
            raise VerificationError("time", too_old)


def age_problem(finished_on: str, max_age_s: int, now: datetime) -> str | None:
    """Why a receipt that finished at ``finished_on`` is older than ``max_age_s``, or None.

    The one wording of an expired receipt: ``prove``'s external provider and every verb
    that weighs a receipt later (``gate``, ``summary``, ``report``) say the same.
    """
    age = now - parse_time(finished_on)
    if age <= timedelta(seconds=max_age_s):
        return None
    return (
        f"receipt finished at {finished_on}, {_span(age)} ago; this provider"
        f" accepts receipts up to maxAge {_span(timedelta(seconds=max_age_s))}"
        " old; issue a fresh one"
    )


def _span(delta: timedelta) -> str:
    seconds = int(delta.total_seconds())
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{seconds / size:.1f} {unit}".replace(".0 ", " ")
    return f"{seconds} s"

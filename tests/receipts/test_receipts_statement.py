"""Receipts: in-toto Statement v1 + test-result predicate + extension; ids; atomic writes."""

from __future__ import annotations

import hashlib
import json
from datetime import timedelta
from pathlib import Path

import in_toto_attestation.v1.statement_pb2 as spb
import pytest
from google.protobuf import json_format
from in_toto_attestation.v1.statement import Statement
from receipts_helpers import T0

from changeloop.model import ContentIdentity
from changeloop.outcome import Finding, Observer, Outcome
from changeloop.outcome import TestCounts as Counts
from changeloop.signing.jcs import canonicalize
from changeloop.signing.keys import generate_private_key
from changeloop.signing.statement import (
    ReceiptFacts,
    ReceiptSchemaError,
    build_statement,
    seal,
    write_atomic,
)

WEB = ContentIdentity(tree="a" * 40, head="b" * 40, dirty=True)
API = ContentIdentity(tree="c" * 40, head=None, dirty=False)


def facts(**over: object) -> ReceiptFacts:
    base: dict[str, object] = dict(
        change="add-x",
        provider="test",
        adapter="test-discovery",
        fingerprint="sha256:" + "1" * 64,
        wiring="sha256:" + "5" * 64,
        subjects={"web": WEB, "api": API},
        sandbox="copy",
        issuer="local",
        started=T0,
        finished=T0 + timedelta(milliseconds=1234),
        configuration={"evidence.yaml": "2" * 64, "command": "3" * 64},
        log_sha256="4" * 64,
        log_tail="\n".join(f"line {i}" for i in range(100)),
    )
    base.update(over)
    return ReceiptFacts(**base)  # type: ignore[arg-type]


def outcome(**over: object) -> Outcome:
    base: dict[str, object] = dict(
        capability="test",
        status="pass",
        claims={"c1": "credited"},
        tests=Counts(3, 2, 0, 1),
        passed_tests=("t1", "t2"),
        findings=(Finding("timeout", "slow", file="a.py", line=3),),
        exit_code=0,
        observer=Observer("test-discovery", "pytest", "8.3"),
        command=("pytest", "-q"),
    )
    base.update(over)
    return Outcome(**base)  # type: ignore[arg-type]


def test_statement_has_the_fixed_shape() -> None:
    st = build_statement(facts(url="https://ci/run/1"), outcome())
    assert st["_type"] == "https://in-toto.io/Statement/v1"
    assert st["predicateType"] == "https://in-toto.io/attestation/test-result/v0.1"
    assert st["subject"] == [
        {"name": "api", "digest": {"gitTree": "c" * 40}},
        {"name": "web", "digest": {"gitTree": "a" * 40}},
    ]
    pred = st["predicate"]
    assert pred["result"] == "PASSED" and pred["url"] == "https://ci/run/1"
    assert pred["passedTests"] == ["t1", "t2"] and pred["failedTests"] == []
    assert {"name": "command", "digest": {"sha256": "3" * 64}} in pred["configuration"]
    ext = pred["changeloop"]
    assert ext["schema"] == "changeloop/receipt@2"
    assert ext["wiring"] == "sha256:" + "5" * 64
    assert ext["repositories"]["web"] == {"tree": "a" * 40, "head": "b" * 40, "dirty": True}
    assert ext["tests"] == {"discovered": 3, "passed": 2, "failed": 0, "skipped": 1}
    assert ext["durationMs"] == 1234
    assert ext["startedOn"] == "2026-01-02T03:04:05.000Z"
    assert ext["finishedOn"] == "2026-01-02T03:04:06.234Z"
    assert ext["log"]["tail"].splitlines()[-1] == "line 99"
    assert len(ext["log"]["tail"].splitlines()) == 40
    assert ext["findings"] == [{"kind": "timeout", "message": "slow", "file": "a.py", "line": 3}]
    assert "details" not in ext


@pytest.mark.parametrize("status", ["fail", "inconclusive"])
def test_anything_but_pass_is_failed(status: str) -> None:
    st = build_statement(facts(), outcome(status=status, reason="why"))
    assert st["predicate"]["result"] == "FAILED"
    assert st["predicate"]["changeloop"]["status"] == status


def test_tests_null_is_kept_distinct_from_zero() -> None:
    st = build_statement(facts(log_sha256=None), outcome(tests=None))
    assert st["predicate"]["changeloop"]["tests"] is None
    assert st["predicate"]["changeloop"]["log"] is None


@pytest.mark.parametrize(
    ("over", "words"),
    [
        ({"status": "fail", "reason": None}, "reason"),
        ({"claims": {"c": "maybe"}}, "maybe"),
        ({"input_mode": "telepathy"}, "telepathy"),
    ],
)
def test_schema_refuses_to_seal_bad_statements(over: dict[str, object], words: str) -> None:
    with pytest.raises(ReceiptSchemaError, match=words):
        build_statement(facts(), outcome(**over))


def test_schema_refuses_a_bad_fingerprint_and_no_subjects() -> None:
    with pytest.raises(ReceiptSchemaError, match="fingerprint"):
        build_statement(facts(fingerprint="md5:x"), outcome())
    with pytest.raises(ValueError, match="at least one repository"):
        build_statement(facts(subjects={}), outcome())


def test_details_and_accepted_issuer_travel_in_the_extension() -> None:
    st = build_statement(facts(), outcome(details={"web": {"sha256": "x"}}, issuer="gha"))
    assert st["predicate"]["changeloop"]["details"] == {
        "web": {"sha256": "x"},
        "acceptedIssuer": "gha",
    }


def test_id_is_sha256_of_the_jcs_payload_and_in_toto_validates_it() -> None:
    st = build_statement(facts(), outcome())
    sealed = seal(st, generate_private_key())
    assert sealed.payload == canonicalize(st)
    assert sealed.id == "sha256:" + hashlib.sha256(sealed.payload).hexdigest()
    env = json.loads(sealed.envelope)
    assert env["payloadType"] == "application/vnd.in-toto+json"
    pb = json_format.Parse(sealed.payload, spb.Statement())
    Statement.copy_from_pb(pb).validate()  # raises on an invalid statement
    assert pb.subject[0].digest["gitTree"] == "c" * 40


def test_write_atomic_replaces_whole_files_and_leaves_no_temp(tmp_path: Path) -> None:
    target = tmp_path / "deep" / "r.json"
    write_atomic(target, b"one")
    write_atomic(target, b"two")
    assert target.read_bytes() == b"two"
    assert sorted(p.name for p in target.parent.iterdir()) == ["r.json"]

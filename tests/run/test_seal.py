"""Sealing alone: outcomes in, signed receipt records out, nothing written."""

from __future__ import annotations

import json
from pathlib import Path

from config_helpers import plan_for
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from changeloop import outcome as records
from changeloop.masking import Masker
from changeloop.model import ContentIdentity, Plan
from changeloop.outcome import Outcome
from changeloop.run.seal import Bound, Sealer, Timing, reused
from changeloop.signing.jcs import canonicalize
from changeloop.signing.statement import sha256_hex
from changeloop.signing.verify import Expectation, verify_envelope

EXECUTION = """\
version: 1
providers:
  test:
    adapter: command
    command: [sh, -c, "echo hunter2-secret-value"]
    claims: [greeting]
    envFrom: [SECRET_TOKEN]
"""
TREE = "4b825dc642cb6eb9a060e54bf8d69288fbe4904d"


def _plan(tmp_path: Path) -> Plan:
    return plan_for(tmp_path / "ws", execution=EXECUTION)


def _sealer(plan: Plan, key: Ed25519PrivateKey, secret: str = "hunter2-secret-value") -> Sealer:
    return Sealer.of(
        plan,
        key=key,
        masker=Masker([secret]),
        sandbox="none",
        issuer="local",
        url=None,
        run_rel=".changeloop/runs/r1",
    )


def _bound() -> Bound:
    ident = ContentIdentity(tree=TREE, head=None, dirty=True)
    return Bound(
        fingerprint="sha256:" + "a" * 64, wiring="sha256:" + "b" * 64, identities={"self": ident}
    )


def test_a_pass_is_sealed_into_a_record_whose_envelope_verifies(tmp_path: Path) -> None:
    plan, key = _plan(tmp_path), Ed25519PrivateKey.generate()
    provider = plan.providers["test"]
    outcome = Outcome(capability="test", status="pass", tests=records.TestCounts(3, 3, 0, 0))
    entry = _sealer(plan, key).seal(provider, outcome, Timing.now(), _bound())
    assert (entry.capability, entry.provider, entry.status) == ("test", "test", "pass")
    assert entry.path == ".changeloop/runs/r1/test/test.test.json"
    assert entry.tests == {"discovered": 3, "passed": 3, "failed": 0, "skipped": 0}
    assert entry.view.claims == {"greeting": "credited"}  # the provider's listed claim
    assert not entry.cached
    verified = verify_envelope(entry.envelope, [key.public_key()], Expectation(change="demo"))
    ext = verified.statement["predicate"]["changeloop"]
    assert ext["fingerprint"] == "sha256:" + "a" * 64
    assert ext["wiring"] == "sha256:" + "b" * 64
    assert verified.statement["subject"][0]["digest"] == {"gitTree": TREE}
    assert entry.id == verified.id


def test_sealing_masks_every_secret_and_writes_nothing(tmp_path: Path) -> None:
    plan, key = _plan(tmp_path), Ed25519PrivateKey.generate()
    before = sorted(p for p in tmp_path.rglob("*"))
    outcome = Outcome(capability="test", status="fail", reason="saw hunter2-secret-value")
    timing = Timing.now()
    entry = _sealer(plan, key).seal(plan.providers["test"], outcome, timing, _bound())
    assert b"hunter2-secret-value" not in entry.envelope
    assert "hunter2-secret-value" not in (entry.reason or "")
    assert entry.view.claims == {"greeting": "failed"}  # a fail fails the listed claim
    assert sorted(p for p in tmp_path.rglob("*")) == before


def test_a_provider_that_ran_may_be_cached_only_when_every_receipt_passed(tmp_path: Path) -> None:
    plan, key = _plan(tmp_path), Ed25519PrivateKey.generate()
    sealer, provider = _sealer(plan, key), plan.providers["test"]
    ok = Outcome(capability="test", status="pass")
    bad = Outcome(capability="test", status="inconclusive", reason="no report")
    ran = sealer.ran(provider, [ok], Timing.now(), _bound(), duration_ms=5, cacheable=True)
    assert ran.state == "ran" and ran.cache and ran.reason is None and ran.duration_ms == 5
    assert not sealer.ran(
        provider, [ok], Timing.now(), _bound(), duration_ms=5, cacheable=False
    ).cache
    mixed = sealer.ran(provider, [bad], Timing.now(), _bound(), duration_ms=5, cacheable=True)
    assert not mixed.cache and mixed.reason == "no report"


def test_a_reused_pass_is_the_same_envelope_and_the_same_record_as_when_sealed(
    tmp_path: Path,
) -> None:
    plan, key = _plan(tmp_path), Ed25519PrivateKey.generate()
    provider = plan.providers["test"]
    sealed = _sealer(plan, key).seal(
        provider, Outcome(capability="test", status="pass"), Timing.now(), _bound()
    )
    payload = verify_envelope(sealed.envelope, [key.public_key()]).payload
    ext = json.loads(payload)["predicate"]["changeloop"]
    report = reused(
        provider, [(sealed.envelope, payload, ext)], origin="shared", run_rel=".changeloop/runs/r1"
    )
    (entry,) = report.receipts
    assert (report.state, report.origin) == ("cached", "shared")
    assert entry.envelope == sealed.envelope and entry.id == sealed.id and entry.cached
    assert entry.view == sealed.view and entry.path == sealed.path


def test_skipped_and_could_not_run_say_why(tmp_path: Path) -> None:
    plan, key = _plan(tmp_path), Ed25519PrivateKey.generate()
    sealer, provider = _sealer(plan, key), plan.providers["test"]
    skipped = sealer.skipped(provider, "dependency build failed", _bound())
    (entry,) = skipped.receipts
    assert entry.status == "inconclusive" and entry.reason == "not run: dependency build failed"
    lost = sealer.could_not_run(provider, "sandbox: no space left on device")
    assert lost.receipts == ()
    assert lost.notes == (
        ("test", "test: provider test could not run: sandbox: no space left on device"),
    )


def test_each_receipt_binds_the_digest_of_its_own_command_when_one_sealer_seals_several(
    tmp_path: Path,
) -> None:
    plan, key = _plan(tmp_path), Ed25519PrivateKey.generate()
    sealer = _sealer(plan, key)
    provider = plan.providers["test"]

    def command_digest(command: tuple[str, ...]) -> str:
        outcome = Outcome(capability="test", status="pass", command=command)
        entry = sealer.seal(provider, outcome, Timing.now(), _bound())
        verified = verify_envelope(entry.envelope, [key.public_key()], Expectation(change="demo"))
        ext = verified.statement["predicate"]["changeloop"]
        assert ext["command"] == list(command)
        digests = {
            c["name"]: c["digest"]["sha256"]
            for c in verified.statement["predicate"]["configuration"]
        }
        return str(digests["command"])

    first, other = ("sh", "-c", "exit 0"), ("sh", "-c", "exit 1")
    assert command_digest(first) == sha256_hex(canonicalize(list(first)))
    assert command_digest(other) == sha256_hex(canonicalize(list(other)))
    assert command_digest(first) == sha256_hex(canonicalize(list(first)))  # asked again
    assert command_digest(first) != command_digest(other)

"""The receipt cache: pass receipts only, byte for byte, atomic."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

from changeloop.caching import local as cache

FP = "sha256:" + "ab" * 32


def envelope(status: str, extra: str = "") -> bytes:
    payload = json.dumps({"predicate": {"changeloop": {"status": status, "x": extra}}}).encode()
    # Odd spacing on purpose: what comes back must be these exact bytes.
    return (
        b'{"payloadType": "application/vnd.in-toto+json",   "payload":"'
        + base64.b64encode(payload)
        + b'", "signatures": []}\n'
    )


def test_roundtrip_is_byte_for_byte(tmp_path: Path) -> None:
    envs = [envelope("pass", "test"), envelope("pass", "discovery")]
    cache.store(tmp_path / "cache", FP, envs)
    assert cache.load(tmp_path / "cache", FP) == envs
    assert (tmp_path / "cache" / ("ab" * 32 + ".json")).is_file()
    assert [p.name for p in (tmp_path / "cache").iterdir()] == ["ab" * 32 + ".json"]  # no tmp left


def test_missing_and_other_fingerprints_miss(tmp_path: Path) -> None:
    assert cache.load(tmp_path / "cache", FP) is None
    cache.store(tmp_path / "cache", FP, [envelope("pass")])
    assert cache.load(tmp_path / "cache", "sha256:" + "cd" * 32) is None


@pytest.mark.parametrize("status", ["fail", "inconclusive", "garbage"])
def test_only_pass_receipts_are_stored(tmp_path: Path, status: str) -> None:
    with pytest.raises(ValueError, match="only pass"):
        cache.store(tmp_path / "cache", FP, [envelope("pass"), envelope(status)])
    assert cache.load(tmp_path / "cache", FP) is None


def test_tampered_or_corrupt_entries_are_misses(tmp_path: Path) -> None:
    cache.store(tmp_path / "cache", FP, [envelope("pass")])
    entry = tmp_path / "cache" / ("ab" * 32 + ".json")
    doc = json.loads(entry.read_text())
    doc["envelopes"] = [base64.b64encode(envelope("fail")).decode()]
    entry.write_text(json.dumps(doc))
    assert cache.load(tmp_path / "cache", FP) is None  # a fail never comes back as reusable
    entry.write_text("{half")
    assert cache.load(tmp_path / "cache", FP) is None
    doc["fingerprint"] = "sha256:" + "00" * 32
    doc["envelopes"] = [base64.b64encode(envelope("pass")).decode()]
    entry.write_text(json.dumps(doc))
    assert cache.load(tmp_path / "cache", FP) is None  # stored under the wrong name


def test_malformed_fingerprint_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="not a sha256"):
        cache.store(tmp_path / "cache", "sha256:../../etc", [envelope("pass")])


def test_overwrite_replaces_atomically(tmp_path: Path) -> None:
    cache.store(tmp_path / "cache", FP, [envelope("pass", "old")])
    cache.store(tmp_path / "cache", FP, [envelope("pass", "new")])
    assert cache.load(tmp_path / "cache", FP) == [envelope("pass", "new")]


def test_the_runs_entry_round_trips_through_the_reader(tmp_path: Path) -> None:
    fingerprint = "sha256:" + "ab" * 32
    target, data = cache.entry_of_passes(tmp_path, fingerprint, [b"one", b'{"two":"\\n"}'])
    target.write_bytes(data)
    assert cache.load_unchecked(tmp_path, fingerprint) == [b"one", b'{"two":"\\n"}']


@pytest.mark.parametrize("bad", ["sha256:" + "a" * 64 + "\n", 'sha256:"' + "a" * 63, "a" * 64])
def test_the_runs_entry_refuses_a_fingerprint_that_is_not_sha256_hex(bad: str) -> None:
    with pytest.raises(ValueError, match="not a sha256 fingerprint"):
        cache.entry_of_passes(Path("/c"), bad, [b"x"])

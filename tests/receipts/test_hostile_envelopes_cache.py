"""A hostile cache entry is a miss, never a crash (docs/threat-model.md).

Cache reuse reads envelopes too: an entry nested 100,000 deep, or holding an
envelope that is, must make `prove` run the provider again — before this, the
provider ended `not-run` with a RecursionError as its reason.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
from prove_helpers import make_change, make_repo, prove_json, provider_entry

DEEP = 100_000
DEEP_JSON = "[" * DEEP + "]" * DEEP


def _deep_file() -> bytes:
    return DEEP_JSON.encode()


def _deep_envelope(fingerprint: str) -> bytes:
    doc = {"fingerprint": fingerprint, "envelopes": [base64.b64encode(DEEP_JSON.encode()).decode()]}
    return json.dumps(doc).encode()


def _deep_payload(fingerprint: str) -> bytes:
    envelope = json.dumps(
        {
            "payload": base64.b64encode(DEEP_JSON.encode()).decode(),
            "payloadType": "application/vnd.in-toto+json",
            "signatures": [{"keyid": "", "sig": "AAAA"}],
        }
    ).encode()
    return json.dumps(
        {"fingerprint": fingerprint, "envelopes": [base64.b64encode(envelope).decode()]}
    ).encode()


@pytest.mark.parametrize(
    "entry",
    [lambda _fp: _deep_file(), _deep_envelope, _deep_payload],
    ids=["deep-entry", "deep-envelope", "deep-payload"],
)
def test_a_deeply_nested_cache_entry_is_a_miss(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], entry: object
) -> None:
    root = make_repo(tmp_path / "ws", {"a.txt": "a\n"})
    make_change(
        root,
        "c",
        "version: 3\nrequires: [check]\n",
        "version: 1\nproviders:\n  check: {adapter: command, command: [git, status]}\n",
    )
    code, _ = prove_json(root, "c", capsys=capsys)
    assert code == 0
    (cached,) = (root / ".changeloop" / "cache").glob("*.json")
    fingerprint = "sha256:" + cached.stem
    cached.write_bytes(entry(fingerprint))  # type: ignore[operator]
    code, doc = prove_json(root, "c", capsys=capsys)
    check = provider_entry(doc, "check")
    assert code == 0 and doc["status"] == "proven", check
    assert check["state"] == "ran" and "RecursionError" not in json.dumps(doc)

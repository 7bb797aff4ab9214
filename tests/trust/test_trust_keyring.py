"""``--trust-keyring FILE``: a bad keyring is a clear refusal (exit 2, file, line, fix), never
a traceback, a hang, or a keyring that trusts less than it says.

Each case runs the real CLI (``gate``) on a real workspace; the good keyring is YAML
with an inline PEM and a path, read the way docs/keys-and-ci.md documents it.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

import pytest
from anchor_helpers import cli, keygen
from gate_helpers import workspace

from changeloop.signing.keys import keyid, load_public_key_file


def _gate(
    root: Path, ring: Path, capsys: pytest.CaptureFixture[str]
) -> tuple[int, dict[str, Any], str]:
    return cli(capsys, "gate", "c1", "--root", str(root), "--trust-keyring", str(ring))


def test_a_yaml_keyring_with_a_path_and_an_inline_key_is_read_and_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = workspace(tmp_path)
    one = keygen(tmp_path / "one", capsys)
    two = keygen(tmp_path / "two", capsys)
    ring = tmp_path / "ring" / "keyring.yaml"
    ring.parent.mkdir()
    inline = two.pub.read_text().replace("\n", "\\n")
    ring.write_text(
        f'version: 1\nissuers:\n  github-actions: ["../one/changeloop.pub"]\n  alice: ["{inline}"]\n'
    )
    code, doc, err = _gate(root, ring, capsys)
    assert code == 1, (doc, err)  # nothing proven yet: but the keyring was read
    assert doc["trust"]["source"] == "keyring"
    assert doc["trust"]["sha256"] == hashlib.sha256(ring.read_bytes()).hexdigest()
    assert doc["trust"]["keyring"] == str(ring)
    # No external provider names these issuers here: the keyring vouches for none of them.
    assert doc["trust"]["keys"] == []
    assert f"trust: keyring {doc['trust']['sha256']}" in err
    assert keyid(load_public_key_file(one.pub)) != keyid(load_public_key_file(two.pub))


@pytest.mark.parametrize(
    ("text", "code", "said"),
    [
        ("version: 1\nissuers: {ci: [a.pub]}\nextra: 1\n", "unknown_key", "extra"),
        ("version: 2\nissuers: {ci: [a.pub]}\n", "version_newer", "version"),
        ("version: 1\nissuers: {ci: []}\n", None, "ci"),
        ("version: 1\nissuers: {ci: [missing.pub]}\n", "keyring_key_unreadable", "missing.pub"),
        ('version: 1\nissuers: {ci: ["-----BEGIN PUBLIC KEY-----\\nnope\\n"]}\n', None, "ci"),
    ],
)
def test_a_bad_keyring_is_refused_with_where_and_a_fix(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, code: str | None, said: str
) -> None:
    root = workspace(tmp_path)
    ring = tmp_path / "keyring.yaml"
    ring.write_text(text)
    exit_code, doc, err = _gate(root, ring, capsys)
    assert exit_code == 2, (doc, err)
    [error, *_] = doc["errors"]
    if code is not None:
        assert error["code"] == code, error
    assert said in error["message"] + str(error.get("path")), error
    assert "keyring.yaml" in str(error.get("path")) + error["message"], error
    assert error.get("fix"), error
    assert "Traceback" not in err


def test_a_keyring_that_is_a_fifo_is_refused_without_waiting(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = workspace(tmp_path)
    ring = tmp_path / "keyring.yaml"
    os.mkfifo(ring)
    exit_code, doc, err = _gate(root, ring, capsys)
    assert exit_code == 2 and doc["errors"][0]["code"] == "keyring_unreadable", (doc, err)
    assert "FIFO" in doc["errors"][0]["message"]

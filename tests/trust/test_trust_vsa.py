"""The summary VSA says what was weighed, under which trust, for which repository and change.

Real keys, real git, the real CLI: ``inputAttestations`` are exactly the receipts the
verdict weighed (a superseded pass and an unverifiable envelope are set aside, each
with its reason, in ``predicate.changeloop.setAside``); ``resourceUri`` names the
repository by its remote URL, never with the credentials in it; ``receipt verify``
reads the VSA back, trust included.
"""

from __future__ import annotations

import base64
import hashlib
import json
import shutil
import time
from pathlib import Path
from typing import Any

import pytest
from anchor_helpers import (
    CHANGE,
    EVIDENCE,
    GOOD,
    cli,
    execution,
    import_receipts,
    keygen,
    sign_off,
)
from repo_helpers import git, make_repo

from changeloop.signing.keys import keyid, load_public_key_file


def _predicate(path: Path) -> dict[str, Any]:
    found: dict[str, Any] = json.loads(base64.b64decode(json.loads(path.read_bytes())["payload"]))
    predicate: dict[str, Any] = found["predicate"]
    return predicate


def test_the_vsa_weighs_exactly_what_the_verdict_weighed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ci = keygen(tmp_path / "ci-keys", capsys)
    stranger = keygen(tmp_path / "stranger-keys", capsys)
    root = make_repo(tmp_path / "ws", {"app.py": GOOD, ".gitignore": ".changeloop/\n"})
    change = root / "openspec" / "changes" / CHANGE
    change.mkdir(parents=True)
    (root / "openspec" / "specs").mkdir()
    (change / "evidence.yaml").write_text(EVIDENCE)
    (change / "execution.yaml").write_text(execution())
    shutil.copy(ci.pub, change / "ci.pub")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "the change")
    git(root, "remote", "add", "origin", "https://robot:s3cret-token@example.invalid/acme/web.git")
    older = sign_off(root, ci.key, tmp_path / "older.json", capsys)
    time.sleep(1.1)  # receipt times are to the millisecond; the newer one is newer
    newer = sign_off(root, ci.key, tmp_path / "newer.json", capsys)
    import_receipts(root, capsys, older, newer)
    receipts = change / "receipts"
    # An envelope nobody trusted signed: read, never weighed.
    alien = sign_off(root, stranger.key, tmp_path / "alien.json", capsys)
    (receipts / "alien.json").write_bytes(alien.read_bytes())

    signer = keygen(tmp_path / "summary-keys", capsys)
    out = tmp_path / "vsa.json"
    argv = ["summary", CHANGE, "--root", str(root), "--sign-key", str(signer.key)]
    code, doc, err = cli(capsys, *argv, "--out", str(out))
    assert code == 1, (doc, err)  # the alien envelope fails the change closed
    predicate = _predicate(out)
    name_of = {p.read_bytes(): p.name for p in receipts.iterdir()}
    weighed = [a["uri"].rsplit("/", 1)[1] for a in predicate["inputAttestations"]]
    assert weighed == [name_of[newer.read_bytes()]]
    aside = {a["uri"].rsplit("/", 1)[1]: a for a in predicate["changeloop"]["setAside"]}
    assert aside[name_of[older.read_bytes()]]["code"] == "superseded"
    assert aside["alien.json"]["code"] == "unverified"
    assert aside["alien.json"]["digest"] == {
        "sha256": hashlib.sha256(alien.read_bytes()).hexdigest()
    }
    assert len(weighed) + len(aside) == len(list(receipts.iterdir()))
    # The repository by its remote URL, the credentials left out; then the change.
    assert predicate["resourceUri"] == (
        f"git+https://example.invalid/acme/web.git#openspec/changes/{CHANGE}"
    )
    assert b"s3cret" not in base64.b64decode(json.loads(out.read_bytes())["payload"])
    trust = predicate["policy"]["annotations"]["trust"]
    assert trust["source"] == "checkout"
    # the checkout's key, and (this checkout's trust) the signer's own, in the order trusted
    assert sorted(trust["keys"]) == sorted(
        keyid(load_public_key_file(k)) for k in (ci.pub, signer.pub)
    )
    code, verified, err = cli(
        capsys, "receipt", "verify", str(out), "--public-key", str(signer.pub), "--change", CHANGE
    )
    assert code == 0, (verified, err)
    assert (
        verified["trust"] == trust and verified["setAside"] == predicate["changeloop"]["setAside"]
    )
    assert verified["resourceUri"] == predicate["resourceUri"]
    assert "judged with trust from: checkout" in err

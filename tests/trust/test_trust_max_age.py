"""``maxAge`` holds wherever a receipt is weighed: ``gate``, ``summary`` and ``report`` too.

A real sign-off (``receipt sign`` with a ``changeloop keygen`` key, imported with
``receipt import``) is accepted by ``prove`` while it is fresh. Once it is older than
the external provider's ``maxAge`` (a few seconds here, really waited for), ``prove``
fails the provider; ``gate``, ``summary`` and ``report`` say not proven too, with the
reason ``prove`` gives — from the committed sign-off and from the workspace's own
receipt of the external provider, which carries the accepted receipt's time.
"""

from __future__ import annotations

import base64
import json
import re
import shutil
import time
from datetime import UTC, datetime
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
from repo_helpers import make_repo

from changeloop.signing.verify import parse_time

MAX_AGE_S = 4


def _ages(text: str) -> str:
    """A reason with its measured ages blanked (two verbs read the clock a moment apart)."""
    return re.sub(r"\d+(?:\.\d+)? (?:s|min|h|d) ago", "… ago", text)


def _payload(path: Path) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(base64.b64decode(json.loads(path.read_bytes())["payload"]))
    return doc


def test_an_expired_sign_off_is_expired_by_every_verb(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ci = keygen(tmp_path / "ci-keys", capsys)
    root = make_repo(tmp_path / "ws", {"app.py": GOOD, ".gitignore": ".changeloop/\n"})
    change = root / "openspec" / "changes" / CHANGE
    change.mkdir(parents=True)
    (root / "openspec" / "specs").mkdir()
    (change / "evidence.yaml").write_text(EVIDENCE)
    (change / "execution.yaml").write_text(execution(max_age=str(MAX_AGE_S)))
    shutil.copy(ci.pub, change / "ci.pub")
    signed = sign_off(root, ci.key, tmp_path / "sign-off.json", capsys)
    import_receipts(root, capsys, signed)
    finished = parse_time(str(_payload(signed)["predicate"]["changeloop"]["finishedOn"]))

    code, doc, err = cli(capsys, "prove", CHANGE, "--root", str(root))
    assert code == 0, (doc, err)
    [local] = (root / ".changeloop" / "receipts" / CHANGE).glob("ci-test*.json")
    ext = _payload(local)["predicate"]["changeloop"]
    # The accepted receipt's time travels with the external provider's own receipt.
    assert (
        ext["details"]["receipt"]["finishedOn"]
        == _payload(signed)["predicate"]["changeloop"]["finishedOn"]
    )
    code, doc, err = cli(capsys, "gate", CHANGE, "--root", str(root))
    assert code == 0, (doc, err)

    wait = (finished - datetime.now(UTC)).total_seconds() + MAX_AGE_S + 1.5
    time.sleep(max(0.0, wait))

    code, gate, err = cli(capsys, "gate", CHANGE, "--root", str(root))
    assert code == 1 and gate["status"] == "not-proven", (gate, err)
    assert gate["claims"]["greeting"]["status"] == "failed"
    gate_reasons = [r["message"] for r in gate["claims"]["greeting"]["reasons"]]
    assert all(r["code"] == "failed" for r in gate["claims"]["greeting"]["reasons"])
    assert any("maxAge" in m for m in gate_reasons), gate_reasons

    signer = keygen(tmp_path / "summary-keys", capsys)
    out = tmp_path / "vsa.json"
    argv = ["summary", CHANGE, "--root", str(root), "--sign-key", str(signer.key)]
    code, doc, err = cli(capsys, *argv, "--out", str(out))
    assert code == 1 and doc["verificationResult"] == "FAILED", (doc, err)
    assert _payload(out)["predicate"]["verifiedLevels"] == ["FAILED"]

    code, doc, err = cli(capsys, "report", CHANGE, "--root", str(root))
    assert code == 0 and doc["status"] == "not-proven", (doc, err)
    assert "NOT PROVEN" in err

    # prove says the same thing, in the same words.
    code, proved, err = cli(capsys, "prove", CHANGE, "--root", str(root), "--no-cache")
    assert code == 1 and proved["claims"]["greeting"]["status"] == "failed", (proved, err)
    prove_reasons = proved["claims"]["greeting"]["reasons"]
    assert any("maxAge" in m for m in prove_reasons), prove_reasons
    assert {_ages(m) for m in prove_reasons} <= {_ages(m) for m in gate_reasons}


def test_the_workspace_receipt_of_an_external_provider_expires_on_its_own(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Without the committed sign-off beside it, the external provider's own receipt still
    expires: the accepted receipt's time is in it."""
    ci = keygen(tmp_path / "ci-keys", capsys)
    root = make_repo(tmp_path / "ws", {"app.py": GOOD, ".gitignore": ".changeloop/\n"})
    change = root / "openspec" / "changes" / CHANGE
    change.mkdir(parents=True)
    (root / "openspec" / "specs").mkdir()
    (change / "evidence.yaml").write_text(EVIDENCE)
    (change / "execution.yaml").write_text(execution(max_age=str(MAX_AGE_S)))
    shutil.copy(ci.pub, change / "ci.pub")
    signed = sign_off(root, ci.key, tmp_path / "sign-off.json", capsys)
    import_receipts(root, capsys, signed)
    finished = parse_time(str(_payload(signed)["predicate"]["changeloop"]["finishedOn"]))
    code, doc, err = cli(capsys, "prove", CHANGE, "--root", str(root))
    assert code == 0, (doc, err)
    shutil.rmtree(change / "receipts")
    code, doc, err = cli(capsys, "gate", CHANGE, "--root", str(root))
    assert code == 0, (doc, err)  # fresh: the workspace's receipt of ci-test proves it

    time.sleep(max(0.0, (finished - datetime.now(UTC)).total_seconds() + MAX_AGE_S + 1.5))
    code, doc, err = cli(capsys, "gate", CHANGE, "--root", str(root))
    assert code == 1 and doc["claims"]["greeting"]["status"] == "failed", (doc, err)
    [reason] = doc["claims"]["greeting"]["reasons"]
    assert reason["code"] == "failed"
    assert "time check failed" in reason["message"] and "maxAge" in reason["message"]
    assert f"openspec/changes/{CHANGE}/receipts/" in reason["message"]

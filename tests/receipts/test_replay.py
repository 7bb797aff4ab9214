"""Replay: a newer FAILED receipt beats an older PASSED one only while both are present.

docs/threat-model.md "Revocation": receipts are files, and whoever can delete a file
in `receipts/` can delete the FAILED one — the older PASSED receipt, still
validly signed for the same content, then proves the change again. Signatures
cannot prevent that (nothing is wrong with the old receipt); `maxAge` bounds
how old an accepted receipt may be, so a replayed pass expires. Both halves
are shown here with the real CLI and real git; docs/threat-model.md cites it.
"""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from receipts_helpers import make_workspace, pem_text, write_files

from changeloop.cli.main import main
from changeloop.signing.dsse import PAYLOAD_TYPE, sign_envelope
from changeloop.signing.jcs import canonicalize
from changeloop.signing.keys import generate_private_key, private_pem
from changeloop.stamps import utc_stamp

CI_KEY = generate_private_key()
CHANGE = "add-review"


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    make_workspace(root, pub_pem=pem_text(CI_KEY))
    key = tmp_path / "ci.key"
    key.write_bytes(private_pem(CI_KEY))
    key.chmod(0o600)
    return root


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, Any]]:
    capsys.readouterr()
    code = main([*argv, "--json"])
    return code, json.loads(capsys.readouterr().out)


def sign(root: Path, status: str, out: Path) -> bytes:
    """What the CI job signs today: `receipt sign` with the CI key."""
    extra = ["--reason", "the reviewer withdrew"] if status == "fail" else []
    argv = [
        "receipt",
        "sign",
        "--root",
        str(root),
        "--change",
        CHANGE,
        "--claims",
        "auth-boundary",
        "--key",
        str(root.parent / "ci.key"),
        "--issuer",
        "github-actions",
        "--status",
        status,
        "--out",
        str(out),
        *extra,
    ]
    assert main(argv) == 0
    return out.read_bytes()


def made_days_ago(envelope: bytes, days: int) -> bytes:
    """The same statement as the CI key would have signed it ``days`` ago."""
    statement = json.loads(base64.b64decode(json.loads(envelope)["payload"]))
    ext = statement["predicate"]["changeloop"]
    then = utc_stamp(datetime.now(UTC) - timedelta(days=days))
    ext["startedOn"] = ext["finishedOn"] = then
    return sign_envelope(canonicalize(statement), PAYLOAD_TYPE, CI_KEY)


def import_(capsys: pytest.CaptureFixture[str], root: Path, path: Path) -> Path:
    code, doc = run(capsys, "receipt", "import", str(path), "--change", CHANGE, "--root", str(root))
    assert code == 0, doc
    out: Path = root / doc["imported"][0]["path"]
    return out


def prove(capsys: pytest.CaptureFixture[str], root: Path) -> tuple[int, dict[str, Any]]:
    return run(capsys, "prove", CHANGE, "--root", str(root))


def test_deleting_the_newer_failed_receipt_revives_the_older_pass(
    ws: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sign(ws, "pass", tmp_path / "pass.json")
    import_(capsys, ws, tmp_path / "pass.json")
    sign(ws, "fail", tmp_path / "fail.json")
    failed = import_(capsys, ws, tmp_path / "fail.json")
    code, doc = prove(capsys, ws)
    assert code == 1 and doc["claims"]["auth-boundary"]["status"] == "failed"
    failed.unlink()  # anyone who can write receipts/ can do this
    code, doc = prove(capsys, ws)
    assert code == 0 and doc["claims"]["auth-boundary"]["status"] == "proven"


def test_max_age_expires_the_replayed_pass(
    ws: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    execution = ws / "openspec" / "changes" / CHANGE / "execution.yaml"
    text = execution.read_text().replace("    ci:", "    maxAge: 1d\n    ci:", 1)
    assert "maxAge" in text
    write_files(execution.parent, {"execution.yaml": text})
    fresh = sign(ws, "pass", tmp_path / "fresh.json")
    old = tmp_path / "old.json"
    old.write_bytes(made_days_ago(fresh, 3))
    import_(capsys, ws, old)
    sign(ws, "fail", tmp_path / "fail.json")
    failed = import_(capsys, ws, tmp_path / "fail.json")
    failed.unlink()  # the replay attempt: only the 3-day-old pass is left
    code, doc = prove(capsys, ws)
    assert code == 1 and doc["claims"]["auth-boundary"]["status"] == "failed"
    assert "maxAge" in json.dumps(doc["claims"]["auth-boundary"]["reasons"])
    # The same wiring accepts a pass CI signs now.
    import_(capsys, ws, tmp_path / "fresh.json")
    code, doc = prove(capsys, ws)
    assert code == 0 and doc["claims"]["auth-boundary"]["status"] == "proven"

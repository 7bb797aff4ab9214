"""``gate`` says each reason once: a stale receipt used to be printed three times
(under the claim, then once per repository of the change-level ``requires``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import repo_helpers

from changeloop.cli.main import main

EVIDENCE = """\
version: 3
repositories: {web: web, api: api}
requires:
  cross-repo-contract: [web, api]
claims:
  contract-agreed:
    statement: web and api read the same contract.
    requires: [cross-repo-contract]
"""
EXECUTION = """\
version: 1
providers:
  cross-repo-contract:
    adapter: contract-digest
    claims: [contract-agreed]
    contract: {web: contract.json, api: contract.json}
"""


@pytest.fixture
def ws(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    root = tmp_path / "ws"
    for name in ("web", "api"):
        repo_helpers.make_repo(root / name, {"contract.json": '{"v": 1}\n', "src.txt": "1\n"})
    change = root / "openspec" / "changes" / "share"
    change.mkdir(parents=True)
    (root / "openspec" / "specs").mkdir()
    (change / "evidence.yaml").write_text(EVIDENCE)
    (change / "execution.yaml").write_text(EXECUTION)
    assert main(["prove", "share", "--root", str(root)]) == 0, capsys.readouterr().err
    (root / "web" / "src.txt").write_text("2\n")  # the receipt is now for old content
    capsys.readouterr()
    return root


def test_a_stale_receipt_is_said_once(ws: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["gate", "share", "--root", str(ws)]) == 1
    lines = [x.strip() for x in capsys.readouterr().err.splitlines() if "stale-content" in x]
    assert len(lines) == 1, lines
    assert "cross-repo-contract" in lines[0]


def test_json_reasons_hold_no_duplicates(ws: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["gate", "share", "--root", str(ws), "--json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    reasons = [json.dumps(r, sort_keys=True) for r in doc["reasons"]]
    assert len(reasons) == len(set(reasons)) == 1, doc["reasons"]
    [claim_reason] = doc["claims"]["contract-agreed"]["reasons"]
    assert claim_reason["code"] == "stale-content"
    assert doc["requires"] == {"cross-repo-contract": {"web": "missing", "api": "missing"}}

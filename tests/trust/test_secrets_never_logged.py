"""envFrom values never reach a log or a receipt, whichever process printed them."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest
from prove_helpers import git, make_change, make_repo, prove_json

SECRET = "hunter2-review-a-sekrit"

EVIDENCE = """\
    version: 3
    requires: [check, other]
"""

EXECUTION = """\
    version: 1
    repositories:
      self:
        setup: [[sh, -c, "echo setup sees $REVIEW_A_TOKEN; exit {setup_exit}"]]
    providers:
      check:
        adapter: command
        command: [sh, -c, "echo $REVIEW_A_TOKEN"]
        envFrom: [REVIEW_A_TOKEN]
      other:
        adapter: command
        command: [sh, -c, "echo other sees $REVIEW_A_TOKEN; exit 1"]
"""


def _tails(root: Path) -> list[str]:
    tails = []
    for path in (root / ".changeloop" / "runs").rglob("*.json"):
        if path.name == "run.json":  # the run's timeline record, not a receipt
            continue
        doc = json.loads(path.read_bytes())
        ext = json.loads(base64.b64decode(doc["payload"]))["predicate"]["changeloop"]
        if ext.get("log"):
            tails.append(ext["log"]["tail"])
    return tails


@pytest.mark.parametrize("setup_exit", [0, 3])
def test_no_process_writes_an_envfrom_value(
    tmp_path: Path, capsys: Any, monkeypatch: pytest.MonkeyPatch, setup_exit: int
) -> None:
    monkeypatch.setenv("REVIEW_A_TOKEN", SECRET)
    root = make_repo(tmp_path / "ws", {"a.txt": "a\n"})
    make_change(root, "c1", EVIDENCE, EXECUTION.replace("{setup_exit}", str(setup_exit)))
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "change")
    code, _doc = prove_json(root, "c1", "--sandbox", "copy", "--no-cache", capsys=capsys)
    assert code == 1
    tails = _tails(root)
    assert tails, "some receipt carries a log tail"
    assert not [t for t in tails if SECRET in t]
    leaked = [
        p
        for p in (root / ".changeloop").rglob("*")
        if p.is_file() and SECRET.encode() in p.read_bytes()
    ]
    assert leaked == []

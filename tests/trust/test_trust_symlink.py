"""A tracked symlink that leaves its repository opens the content identity (docs/threat-model.md).

git hashes a link's text, not its target: a repository whose ``data.txt``
points at ``../outside/data.txt`` keeps its tree when the target changes. So
its providers are never reused from the cache, and their receipts say why.
"""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path
from typing import Any

import pytest
from prove_helpers import git, make_change, make_repo, prove_json, provider_entry

EVIDENCE = """\
version: 3
requires: [check]
"""
EXECUTION = """\
version: 1
providers:
  check:
    adapter: command
    command: [sh, -c, "grep -q good data.txt"]
"""


def _workspace(tmp_path: Path, target: str) -> Path:
    root = make_repo(tmp_path / "ws", {"README": "x\n"}, commit=False)
    os.symlink(target, root / "data.txt")
    make_change(root, "c1", EVIDENCE, EXECUTION)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "init")
    return root


def _findings(root: Path, doc: dict[str, Any]) -> list[dict[str, Any]]:
    [receipt] = provider_entry(doc, "check")["receipts"]
    envelope = json.loads((root / receipt["path"]).read_text())
    ext = json.loads(base64.b64decode(envelope["payload"]))["predicate"]["changeloop"]
    return list(ext["findings"])


def test_breaking_the_target_outside_is_seen_not_hidden_by_the_cache(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "data.txt").write_text("good\n")
    root = _workspace(tmp_path, "../outside/data.txt")
    code, doc = prove_json(root, "c1", capsys=capsys)
    assert code == 0, doc
    kinds = [f["kind"] for f in _findings(root, doc)]
    assert kinds == ["external-symlink"]
    assert "data.txt" in _findings(root, doc)[0]["message"]
    (outside / "data.txt").write_text("broken\n")
    code, doc = prove_json(root, "c1", capsys=capsys)
    assert provider_entry(doc, "check")["state"] == "ran"
    assert code == 1 and doc["status"] == "not-proven"


def test_a_link_inside_the_repository_keeps_the_cache(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = make_repo(tmp_path / "ws", {"real.txt": "good\n"}, commit=False)
    os.symlink("real.txt", root / "data.txt")
    make_change(root, "c1", EVIDENCE, EXECUTION)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "init")
    code, doc = prove_json(root, "c1", capsys=capsys)
    assert code == 0 and _findings(root, doc) == []
    code, doc = prove_json(root, "c1", capsys=capsys)
    assert code == 0 and provider_entry(doc, "check")["state"] == "cached"


def test_an_absolute_link_out_of_the_repository_opens_it_too(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    outside = tmp_path / "elsewhere.txt"
    outside.write_text("good\n")
    root = _workspace(tmp_path, str(outside))
    code, doc = prove_json(root, "c1", capsys=capsys)
    assert code == 0 and [f["kind"] for f in _findings(root, doc)] == ["external-symlink"]
    code, doc = prove_json(root, "c1", capsys=capsys)
    assert provider_entry(doc, "check")["state"] == "ran"

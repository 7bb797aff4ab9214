"""Secrets are masked in everything changeloop writes (docs/threat-model.md).

A failing pytest run whose test asserts on an ``envFrom`` token puts the token
into the JUnit report's failure message and into a parametrized test id; after
``prove`` no file under the workspace, no decoded receipt payload, no ``--json``
and no board line may hold it.
"""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path
from typing import Any

import pytest
from prove_helpers import git, make_change, make_repo

from changeloop.cli.main import main

TOKEN = "tok-3f9a8c7e2b1d"
TEST_FILE = """\
import os

import pytest


def test_token_is_the_production_one() -> None:
    token = os.environ["API_TOKEN"]
    print("using token", token)
    assert token == "the-production-token"


@pytest.mark.parametrize("value", [os.environ.get("API_TOKEN", "unset")])
def test_named_after_the_token(value: str) -> None:
    assert value
"""
EVIDENCE = """\
version: 3
claims:
  api-access:
    statement: The client authenticates.
    requires: [test]
"""
EXECUTION = """\
version: 1
providers:
  test:
    adapter: test-discovery
    command: [python3, -m, pytest, -p, no:cacheprovider, --junitxml=.changeloop/reports/test.xml]
    report: .changeloop/reports/test.xml
    envFrom: [API_TOKEN]
    claims: [api-access]
"""


def _workspace(tmp_path: Path) -> Path:
    root = make_repo(tmp_path / "ws", {"test_api.py": TEST_FILE, ".gitignore": "__pycache__/\n"})
    make_change(root, "add-api", EVIDENCE, EXECUTION)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "change")
    return root


def _payloads(root: Path) -> list[dict[str, Any]]:
    out = []
    for path in root.rglob("*.json"):
        try:
            doc = json.loads(path.read_bytes())
        except (ValueError, OSError):
            continue
        if isinstance(doc, dict) and "payload" in doc:
            out.append(json.loads(base64.b64decode(doc["payload"])))
    return out


@pytest.mark.parametrize("sandbox", ["none", "copy"])
def test_the_token_is_nowhere_after_a_failing_run(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    sandbox: str,
) -> None:
    monkeypatch.setenv("API_TOKEN", TOKEN)
    root = _workspace(tmp_path)
    capsys.readouterr()
    code = main(["prove", "add-api", "--root", str(root), "--json", "--sandbox", sandbox])
    out, err = capsys.readouterr()
    assert code == 1
    doc = json.loads(out)
    [test] = [r for p in doc["providers"] for r in p["receipts"] if r["capability"] == "test"]
    assert test["status"] == "fail"
    # The run really saw the token (masked where it shows) …
    payloads = _payloads(root)
    statements = [p for p in payloads if p["predicate"]["changeloop"]["capability"] == "test"]
    assert statements
    ext = statements[0]["predicate"]["changeloop"]
    messages = " ".join(f["message"] for f in ext["findings"])
    failed = statements[0]["predicate"]["failedTests"] + statements[0]["predicate"]["passedTests"]
    assert "***" in messages or "***" in json.dumps(ext["details"]), ext
    assert any("***" in name for name in failed), failed
    report = next((root / ".changeloop" / "runs").rglob("report.xml"))
    assert "***" in report.read_text()
    # … and it is nowhere in clear.
    assert TOKEN not in out and TOKEN not in err
    leaked = [
        str(p.relative_to(root))
        for p in root.rglob("*")
        if p.is_file()
        and not p.is_symlink()
        and ".git" not in p.relative_to(root).parts
        and TOKEN.encode() in p.read_bytes()
    ]
    assert leaked == []
    assert [p for p in payloads if TOKEN in json.dumps(p)] == []


def test_a_value_too_short_to_be_a_secret_is_not_masked_and_preflight_warns(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("API_TOKEN", "abc")
    root = _workspace(tmp_path)
    capsys.readouterr()
    main(["prove", "add-api", "--root", str(root), "--json"])
    _out, err = capsys.readouterr()
    assert "API_TOKEN" in err and "shorter than 8" in err
    assert os.environ["API_TOKEN"] == "abc"

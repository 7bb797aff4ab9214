"""One error boundary for every verb, through ``python -m changeloop`` (docs/ARCHITECTURE.md).

A usage error or a refusal under ``--json`` still prints the verb's one JSON
document, with ``errors``, and exits 2 — never a traceback.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from prove_helpers import make_change, make_repo
from repo_paths import REPO_ROOT

ARGVS = [
    ["prove", "nope"],
    ["prove", "c1", "--bogus"],
    ["gate", "nope"],
    ["gate", "--bogus"],
    ["summary", "nope"],
    ["quality", "nope"],
    ["report", "nope"],
    ["adapters", "check", "--bogus"],
    ["evidence", "doctor", "nope"],
    ["evidence", "init", "nope"],
    ["receipt", "verify", "x.json", "--public-key", "y.pub"],
    ["keygen", "--out", "/proc/no/such/dir"],
    ["no-such-verb"],
]


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = make_repo(tmp_path_factory.mktemp("ws") / "ws", {"a.txt": "a\n"})
    make_change(
        root,
        "c1",
        "version: 3\nrequires: [t]\n",
        'version: 1\nproviders:\n  t: {adapter: command, command: ["true"]}\n',
    )
    return root


@pytest.mark.parametrize("argv", ARGVS, ids=[" ".join(a) for a in ARGVS])
def test_every_verb_answers_json_errors_with_exit_2(workspace: Path, argv: list[str]) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    result = subprocess.run(
        [sys.executable, "-m", "changeloop", *argv, "--json"],
        cwd=workspace,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert result.returncode == 2, (result.stdout, result.stderr)
    doc = json.loads(result.stdout)
    assert doc["errors"] and all(e["code"] and e["message"] for e in doc["errors"])
    assert "Traceback" not in result.stderr and "Traceback" not in result.stdout

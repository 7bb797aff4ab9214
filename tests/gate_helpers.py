"""A small real workspace for gate and summary tests: one git repository, one change."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from prove_helpers import make_change, make_repo

from changeloop.cli.main import main

EVIDENCE = """\
version: 3
requires: [static-analysis]
claims:
  greeting: {requires: [check]}
"""
EXECUTION = """\
version: 1
providers:
  check:
    adapter: command
    command: [sh, check.sh]
    claims: [greeting]
  static-analysis:
    adapter: command
    command: [sh, check.sh]
"""


def workspace(tmp_path: Path, script: str = "exit 0\n") -> Path:
    root = make_repo(tmp_path / "ws", {"check.sh": script, ".gitignore": ".changeloop/\n"})
    make_change(root, "c1", EVIDENCE, EXECUTION)
    return root


def run(argv: list[str], capsys: Any) -> tuple[int, dict[str, Any] | None, str]:
    capsys.readouterr()
    code = main(argv)
    out, err = capsys.readouterr()
    return code, (json.loads(out) if out.strip().startswith("{") else None), err


def gate(root: Path, capsys: Any, *extra: str) -> tuple[int, dict[str, Any]]:
    code, doc, err = run(["gate", "c1", "--root", str(root), "--json", *extra], capsys)
    assert doc is not None, err
    return code, doc


def prove(root: Path, capsys: Any, *extra: str) -> int:
    code, _doc, _err = run(["prove", "c1", "--root", str(root), "--json", *extra], capsys)
    return code


def codes(doc: dict[str, Any], claim: str = "greeting") -> list[str]:
    return [r["code"] for r in doc["claims"][claim]["reasons"]]

"""A key only another adapter reads is a preflight warning, never silence and never a refusal.

A ``command`` provider with ``minimum: 50`` (test-discovery's), ``project:
chromium`` (playwright's), ``threshold: 0.9`` (mutation's) and ``contract``
(contract-digest's) used to prove without a word.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import repo_helpers

from changeloop.cli.main import main
from changeloop.preflight.adapter_keys import ADAPTER_KEYS, COMMON_KEYS
from changeloop.providers.registry import ADAPTERS
from changeloop.schemas import load as load_schema

EXECUTION = """\
version: 1
providers:
  test:
    adapter: command
    command: [python3, -m, unittest, -v, test_greeting]
    claims: [greeting]
    minimum: 50
    project: chromium
    threshold: 0.9
    contract: {self: greeting.py}
  static-analysis:
    adapter: command
    command: [python3, -m, py_compile, greeting.py, test_greeting.py]
"""
SHOWN = "openspec/changes/add-greeting/execution.yaml"


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    change = "openspec/changes/add-greeting"
    return repo_helpers.basic_example(tmp_path / "ws", {f"{change}/execution.yaml": EXECUTION})


def test_prove_warns_about_each_key_and_still_proves(
    ws: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["prove", "add-greeting", "--root", str(ws), "--json"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert json.loads(captured.out)["status"] == "proven"
    for key, line, owner in (
        ("minimum", 7, "test-discovery"),
        ("project", 8, "playwright"),
        ("threshold", 9, "mutation"),
        ("contract", 10, "contract-digest"),
    ):
        [said] = [x for x in captured.err.splitlines() if f"key '{key}'" in x]
        assert said.startswith(f"warning: {SHOWN}:{line}:"), said
        assert "adapter command" in said and owner in said and "ignores it" in said
    assert "command uses:" in captured.err and "envelope" in captured.err


def test_doctor_shows_them_as_warnings_not_unresolved(
    ws: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["evidence", "doctor", "add-greeting", "--root", str(ws), "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert (code, doc["unresolved"]) == (0, 0), doc
    warned = [f for f in doc["findings"] if f["kind"] == "preflight-warning"]
    assert sorted(f["line"] for f in warned) == [7, 8, 9, 10]
    for finding in warned:
        assert finding["severity"] == "warning" and finding["code"] == "key_not_read"
        assert finding["path"] == SHOWN and "command" in finding["suggested_action"]


def test_a_key_of_the_providers_own_adapter_is_quiet(
    ws: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (ws / "openspec/changes/add-greeting/execution.yaml").write_text(
        EXECUTION.partition("    minimum")[0]
        + "    envelope: false\n"
        + EXECUTION.partition("{self: greeting.py}\n")[2]
    )
    assert main(["prove", "add-greeting", "--root", str(ws), "--dry-run"]) == 0
    assert "warning" not in capsys.readouterr().err


def test_every_schema_key_belongs_to_the_common_set_or_an_adapter() -> None:
    """The table cannot fall behind the schema: a new key must be given an owner."""
    schema = load_schema("execution-v1.json")
    keys = set(schema["$defs"]["provider"]["properties"])
    owned = set(COMMON_KEYS).union(*ADAPTER_KEYS.values())
    assert keys == owned
    assert set(ADAPTER_KEYS) == set(ADAPTERS)

"""Every statement a real ``prove`` writes fits the shipped schema.

Sealing no longer runs the JSON Schema on statements changeloop builds from its
own typed records (``receipts.guard`` checks only what the types cannot say);
the full check moved here. Real proves of one change with several adapters and
outcomes — command pass, fail, runner envelope, timeout, a missing executable,
test-discovery over a real pytest run, a dependency's skip, a repository setup
that fails, a cached re-prove, contract-digest across two repositories — then
every envelope file
under ``.changeloop/`` is verified and its statement validated with the full
schema (``_check_statement`` below) and in-toto's own ``Statement.validate``.
"""

from __future__ import annotations

import base64
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from google.protobuf import json_format
from in_toto_attestation.v1.statement import Statement
from in_toto_attestation.v1.statement_pb2 import Statement as StatementProto
from prove_helpers import make_change, make_repo, prove_json
from receipts_helpers import make_workspace

from changeloop.schemas import validate_named
from changeloop.signing.statement import PREDICATE_TYPE, STATEMENT_TYPE, extension_problem

PY = sys.executable

EVIDENCE = """\
version: 3
claims:
  greets: {requires: [test]}
  styled: {requires: [lint]}
  enveloped: {requires: [custom]}
  slow: {requires: [slow]}
  later: {requires: [after]}
requires: [missing-tool]
"""

EXECUTION = f"""\
version: 1
providers:
  unit:
    adapter: test-discovery
    command: ["{PY}", -m, pytest, -q, -p, no:cacheprovider, --junitxml=out/r.xml]
    report: out/r.xml
    claims: [greets]
  lint:
    adapter: command
    capability: lint
    command: [sh, -c, "echo lint failed >&2; exit 3"]
    claims: [styled]
  custom:
    adapter: command
    capability: custom
    envelope: true
    command: ["{PY}", -c, "import json; print(json.dumps({{'exit_code': 0, 'passed': True, 'findings': []}}))"]
    claims: [enveloped]
  slow:
    adapter: command
    capability: slow
    timeoutMs: 200
    command: [sleep, "5"]
    claims: [slow]
  after:
    adapter: command
    capability: after
    dependsOn: [lint]
    command: ["true"]
    claims: [later]
  ghost:
    adapter: command
    capability: missing-tool
    command: [no-such-tool-changeloop-test]
"""

FILES = {
    "test_app.py": (
        "import pytest\n\n"
        "@pytest.mark.claim('greets')\n"
        "def test_greets():\n    assert 'hi'\n\n"
        "def test_skipped():\n    pytest.skip('later')\n"
    ),
    "conftest.py": (
        "def pytest_configure(config):\n"
        "    config.addinivalue_line('markers', 'claim(id): the claim a test cites')\n"
    ),
}


def _statements(root: Path) -> dict[Path, dict[str, Any]]:
    """Every envelope file changeloop wrote under .changeloop/, decoded (cache entries too)."""
    state = root / ".changeloop"
    found: dict[Path, dict[str, Any]] = {}
    for path in sorted(state.rglob("*.json")):
        if path.name.startswith(".") or "pgroups" in path.parts:
            continue
        doc = json.loads(path.read_bytes())
        envelopes = []
        if isinstance(doc, dict) and "payloadType" in doc:
            envelopes = [doc]
        elif isinstance(doc, dict) and "envelopes" in doc:  # a cache entry
            envelopes = [json.loads(base64.b64decode(e)) for e in doc["envelopes"]]
        for index, envelope in enumerate(envelopes):
            found[path.with_suffix(f".{index}.json")] = json.loads(
                base64.b64decode(envelope["payload"])
            )
    return found


def _fits(statement: dict[str, Any]) -> None:
    assert _check_statement(statement) is None  # the full JSON Schema of the extension
    for finding in statement["predicate"]["changeloop"]["findings"]:
        assert validate_named("finding.json", finding) is None, finding
    proto = json_format.ParseDict(statement, StatementProto())
    Statement.copy_from_pb(proto).validate()  # in-toto's own check


def test_every_statement_of_real_proves_fits_the_schema(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = make_repo(
        tmp_path / "ws",
        {**FILES, ".gitignore": ".changeloop/\nout/\n"},
    )
    make_change(root, "c", EVIDENCE, EXECUTION)
    code, doc = prove_json(root, "c", capsys=capsys)
    assert code == 1, doc  # lint fails, slow times out, ghost cannot start
    statuses = {
        entry["name"]: {r["capability"]: r["status"] for r in entry["receipts"]}
        for entry in doc["providers"]
    }
    assert statuses["unit"] == {"test": "pass", "discovery": "pass"}, statuses
    assert statuses["lint"] == {"lint": "fail"}
    assert statuses["custom"] == {"custom": "pass"}
    assert statuses["slow"] == {"slow": "fail"}
    assert statuses["after"] == {"after": "inconclusive"}  # skipped: its dependency failed
    assert statuses["ghost"] == {"missing-tool": "fail"}

    # A repository setup that fails seals a receipt of its own.
    execution = (root / "openspec/changes/c/execution.yaml").read_text()
    setup = "repositories:\n  self:\n    setup: [[sh, -c, 'exit 7']]\n"
    (root / "openspec/changes/c/execution.yaml").write_text(
        execution.replace("version: 1\n", f"version: 1\n{setup}", 1)
    )
    code, _doc = prove_json(root, "c", "--sandbox", "copy", capsys=capsys)
    assert code == 1
    (root / "openspec/changes/c/execution.yaml").write_text(execution)

    # A second prove reuses the cached passes byte for byte.
    code, again = prove_json(root, "c", capsys=capsys)
    assert code == 1
    cached = {e["name"] for e in again["providers"] if e["state"] == "cached"}
    assert {"unit", "custom"} <= cached, again["providers"]

    statements = _statements(root)
    kinds = {
        (s["predicate"]["changeloop"]["adapter"], s["predicate"]["changeloop"]["status"])
        for s in statements.values()
    }
    assert {
        ("test-discovery", "pass"),
        ("command", "fail"),
        ("command", "pass"),
        ("command", "inconclusive"),
    } <= kinds, kinds
    assert any(s["predicate"]["changeloop"]["capability"] == "setup" for s in statements.values())
    assert any(
        f["kind"] == "timeout"
        for s in statements.values()
        for f in s["predicate"]["changeloop"]["findings"]
    )
    _all_fit(statements)


def _all_fit(statements: dict[Path, dict[str, Any]]) -> None:
    assert statements
    for path, statement in statements.items():
        try:
            _fits(statement)
        except Exception as exc:  # name the file in the failure
            raise AssertionError(f"{path}: {exc}") from exc


CONTRACT = (
    "  contract:\n    adapter: contract-digest\n    claims: [auth-boundary]\n"
    "    contract: {web: contract.json, api: contract.json}\n"
    "  drift:\n    adapter: contract-digest\n    capability: drift\n"
    "    contract: {web: src/app.txt, api: src/api.txt}\n"
)


def test_contract_digest_statements_across_two_repositories_fit_the_schema(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two repositories: subjects and ``repositories`` with two entries, a pass and a drift."""
    make_workspace(tmp_path, extra_provider=CONTRACT)
    code, doc = prove_json(tmp_path, "add-review", capsys=capsys)
    assert code == 1, doc  # nothing gives the claim its review
    statuses = {e["name"]: [r["status"] for r in e["receipts"]] for e in doc["providers"]}
    assert statuses == {"contract": ["pass"], "drift": ["fail"]}, statuses
    statements = _statements(tmp_path)
    assert any(len(s["subject"]) == 2 for s in statements.values())
    _all_fit(statements)


def _check_statement(statement: dict[str, Any]) -> str | None:
    """The first way ``statement`` misses the shipped schema, or None."""
    if statement.get("_type") != STATEMENT_TYPE or statement.get("predicateType") != PREDICATE_TYPE:
        return "wrong _type or predicateType"
    if not statement.get("subject"):
        return "no subject"
    predicate = statement.get("predicate")
    if not isinstance(predicate, dict) or predicate.get("result") not in ("PASSED", "FAILED"):
        return "predicate.result must be PASSED or FAILED"
    return extension_problem(predicate.get("changeloop"))

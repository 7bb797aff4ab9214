"""``evidence doctor`` sees what a first ``prove`` would refuse (docs/bootstrap.md).

Each case breaks examples/basic one way that ``prove`` refuses before
anything runs (exit 2); doctor must report it as an unresolved error finding
naming the file and line with a fix, and exit 1, instead of "0 unresolved".
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import repo_helpers

from changeloop.cli.main import main

EVIDENCE = """\
version: 3
requires: [static-analysis]
claims:
  greeting:
    statement: A person is greeted by their trimmed name.
    requires: [test]
"""

TEST = """\
  test:
    adapter: command
    command: [python3, -m, unittest, -v, test_greeting]
    claims: [greeting]
"""

STATIC = """\
  static-analysis:
    adapter: command
    command: [python3, -m, py_compile, greeting.py]
"""


def _workspace(tmp_path: Path, evidence: str, execution: str) -> Path:
    change = "openspec/changes/add-greeting"
    files = {f"{change}/evidence.yaml": evidence, f"{change}/execution.yaml": execution}
    return repo_helpers.basic_example(tmp_path / "ws", files)


CASES = {
    "unknown-adapter": (
        EVIDENCE,
        "version: 1\nproviders:\n" + TEST.replace("adapter: command", "adapter: comand") + STATIC,
        "execution.yaml",
        4,
    ),
    "cycle": (
        EVIDENCE,
        "version: 1\nproviders:\n"
        + TEST
        + "    dependsOn: [static-analysis]\n"
        + STATIC
        + "    dependsOn: [test]\n",
        "execution.yaml",
        None,
    ),
    "inputs-escape": (
        EVIDENCE,
        "version: 1\nproviders:\n" + TEST + "    inputs: [../outside]\n" + STATIC,
        "execution.yaml",
        7,
    ),
    "report-absolute": (
        EVIDENCE,
        "version: 1\nproviders:\n" + TEST + "    report: /etc/passwd\n" + STATIC,
        "execution.yaml",
        7,
    ),
    "secret-literal": (
        EVIDENCE,
        "version: 1\nproviders:\n" + TEST + "    env: {API_TOKEN: abc}\n" + STATIC,
        "execution.yaml",
        7,
    ),
    "unknown-dependency": (
        EVIDENCE,
        "version: 1\nproviders:\n" + TEST + "    dependsOn: [nosuch]\n" + STATIC,
        "execution.yaml",
        7,
    ),
    "unknown-claim": (
        EVIDENCE,
        "version: 1\nproviders:\n" + TEST.replace("[greeting]", "[nosuchclaim]") + STATIC,
        "execution.yaml",
        6,
    ),
    "claim-unknown-repository": (
        EVIDENCE + "    repository: nosuch\n",
        "version: 1\nproviders:\n" + TEST + STATIC,
        "evidence.yaml",
        7,
    ),
    "readiness-no-port": (
        EVIDENCE,
        "version: 1\nproviders:\n"
        + TEST
        + "    services: [web]\n"
        + STATIC
        + "services:\n  web:\n    command: [python3, -m, http.server]\n"
        + "    readiness: {url: 'http://127.0.0.1/'}\n",
        "execution.yaml",
        14,
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_doctor_reports_what_prove_refuses(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str
) -> None:
    evidence, execution, file, line = CASES[case]
    root = _workspace(tmp_path, evidence, execution)
    capsys.readouterr()
    assert main(["prove", "add-greeting", "--root", str(root), "--dry-run", "--json"]) == 2
    refused = json.loads(capsys.readouterr().out)["errors"]
    assert refused, case

    code = main(["evidence", "doctor", "add-greeting", "--root", str(root), "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 1, doc
    found = [f for f in doc["findings"] if f["kind"] == "preflight-refused"]
    assert all(f["path"].endswith(file) for f in found), found
    assert found, doc
    assert doc["unresolved"] >= len(refused)
    # every refusal prove gave is there, with its code, line and fix
    codes = {f.get("code") for f in doc["findings"]}
    assert {e["code"] for e in refused} <= codes
    for finding in found:
        assert finding["severity"] == "error"
        assert finding["kind"]
        assert finding["suggested_action"]
        # an edit has no command to paste: an agent running every playbook_command must
        # never be handed an editor
        assert finding["playbook_command"] is None
    if line is not None:
        assert line in {f.get("line") for f in found}, found


def test_doctor_human_output_names_file_line_and_fix(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    evidence, execution, _, _ = CASES["unknown-adapter"]
    root = _workspace(tmp_path, evidence, execution)
    capsys.readouterr()
    assert main(["evidence", "doctor", "add-greeting", "--root", str(root)]) == 1
    err = capsys.readouterr().err
    assert "[preflight-refused] openspec/changes/add-greeting/execution.yaml:4:" in err
    assert "unknown adapter 'comand'" in err
    assert "do: use one of the known adapters" in err
    assert "0 unresolved" not in err


def test_doctor_on_the_example_as_shipped_stays_clean(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = repo_helpers.basic_example(tmp_path / "ws")
    capsys.readouterr()
    code = main(["evidence", "doctor", "add-greeting", "--root", str(root), "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0 and doc["unresolved"] == 0, doc
    assert not [f for f in doc["findings"] if f["kind"] == "preflight-refused"]

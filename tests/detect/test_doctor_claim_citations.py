"""doctor finds claims no test cites (``claim-not-cited``), with the snippet for the framework
the provider runs; a pytest whose own config would refuse the marker gets its registration
(``claim-marker-unregistered``); ``init`` previews that registration; a typo'd capability is
refused with "did you mean". Real files, the real CLI; nothing runs but doctor itself.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from prove_helpers import make_change, make_repo

from changeloop.cli.main import main

EVIDENCE = "version: 3\nclaims:\n  greeting:\n    statement: hi\n    requires: [test]\n"


def _doctor(root: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, dict[str, Any]]:
    capsys.readouterr()
    code = main(["evidence", "doctor", "c", "--root", str(root), "--json"])
    return code, json.loads(capsys.readouterr().out)


def _kinds(doc: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [f for f in doc["findings"] if f["kind"] == kind]


PYTEST_PROJECT = {
    "pyproject.toml": '[project]\nname = "g"\nversion = "0"\n\n[tool.pytest.ini_options]\n'
    'addopts = "--strict-markers"\n',
    "tests/test_greet.py": "def test_greets():\n    assert True\n",
}


def test_pytest_claim_not_cited_gives_the_marker_and_its_registration(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = make_repo(tmp_path / "ws", PYTEST_PROJECT)
    make_change(root, "c", EVIDENCE)
    code, doc = _doctor(root, capsys)
    assert code == 1 and doc["unresolved"] == 1
    (finding,) = _kinds(doc, "claim-not-cited")
    assert '@pytest.mark.claim("greeting")' in finding["suggested_action"]
    assert finding["playbook_command"] == "${EDITOR:-vi} tests/test_greet.py"
    assert finding["severity"] == "error" and finding["capability"] == "test"
    (marker,) = _kinds(doc, "claim-marker-unregistered")
    assert marker["severity"] == "warning"  # changeloop's own runs register it
    assert '[tool.pytest.ini_options]\nmarkers = ["claim(' in marker["suggested_action"]


def test_a_cited_and_registered_claim_leaves_doctor_quiet(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    files = dict(PYTEST_PROJECT)
    files["pyproject.toml"] += 'markers = ["claim(*ids): changeloop claims"]\n'
    files["tests/test_greet.py"] = (
        'import pytest\n\n\n@pytest.mark.claim("greeting", depth="unit")\n'
        "def test_greets():\n    assert True\n"
    )
    root = make_repo(tmp_path / "ws", files)
    make_change(root, "c", EVIDENCE)
    code, doc = _doctor(root, capsys)
    assert not _kinds(doc, "claim-not-cited") and not _kinds(doc, "claim-marker-unregistered")
    assert code == 0, doc


def test_vitest_claim_not_cited_gives_the_name_tag(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    package = {"name": "s", "scripts": {"test": "vitest run"}, "devDependencies": {"vitest": "3"}}
    root = make_repo(
        tmp_path / "ws",
        {"package.json": json.dumps(package), "src/s.test.js": 'test("x", () => {});\n'},
    )
    make_change(root, "c", EVIDENCE)
    _, doc = _doctor(root, capsys)
    (finding,) = _kinds(doc, "claim-not-cited")
    assert 'test("what it checks [claim:greeting]"' in finding["suggested_action"]
    assert finding["playbook_command"] == "${EDITOR:-vi} src/s.test.js"
    (root / "src" / "s.test.js").write_text('test("x [claim:greeting]", () => {});\n')
    _, doc = _doctor(root, capsys)
    assert not _kinds(doc, "claim-not-cited")


def test_unittest_claim_not_cited_gives_the_docstring_tag(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = make_repo(
        tmp_path / "ws",
        {
            "tox.ini": "[testenv]\ncommands = python -m unittest discover -s tests\n",
            "tests/test_g.py": "import unittest\n\n\nclass T(unittest.TestCase):\n"
            "    def test_g(self):\n        self.assertTrue(True)\n",
        },
    )
    make_change(root, "c", EVIDENCE)
    _, doc = _doctor(root, capsys)
    (finding,) = _kinds(doc, "claim-not-cited")
    assert '"""What it checks [claim:greeting]."""' in finding["suggested_action"]
    assert "docstring" in finding["suggested_action"]


def test_a_command_provider_is_told_to_list_the_claim(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = make_repo(tmp_path / "ws", {"README.md": "x\n"})
    make_change(
        root,
        "c",
        EVIDENCE,
        'version: 1\nproviders:\n  test:\n    adapter: command\n    command: ["true"]\n',
    )
    _, doc = _doctor(root, capsys)
    (finding,) = _kinds(doc, "claim-not-cited")
    assert "claims: [greeting]" in finding["suggested_action"]
    assert finding["playbook_command"] == "${EDITOR:-vi} openspec/changes/c/execution.yaml"


def test_init_previews_the_marker_registration(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = make_repo(tmp_path / "ws", PYTEST_PROJECT)
    make_change(root, "c", EVIDENCE)
    capsys.readouterr()
    assert main(["evidence", "init", "c", "--root", str(root), "--json"]) == 0
    (item,) = json.loads(capsys.readouterr().out)["markerRegistration"]
    assert item["file"] == "pyproject.toml" and "markers = [" in item["lines"]
    assert main(["evidence", "init", "c", "--root", str(root)]) == 0
    err = capsys.readouterr().err
    assert "register the marker in pyproject.toml (not written" in err
    assert 'markers = ["claim(' in err
    assert (root / "pyproject.toml").read_text() == PYTEST_PROJECT["pyproject.toml"]  # untouched


@pytest.mark.parametrize(("typo", "meant"), [("tests", "test"), ("discover", "discovery")])
def test_a_typod_capability_is_refused_with_did_you_mean(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], typo: str, meant: str
) -> None:
    root = make_repo(tmp_path / "ws", PYTEST_PROJECT)
    make_change(root, "c", EVIDENCE.replace("[test]", f"[{typo}]"))
    capsys.readouterr()
    assert main(["prove", "c", "--root", str(root), "--json"]) == 2
    (error,) = json.loads(capsys.readouterr().out)["errors"]
    assert error["code"] == "unknown_capability"
    assert f"did you mean {meant!r}?" in error["message"]
    assert error["path"].endswith("evidence.yaml") and error["line"] == 5
    code, doc = _doctor(root, capsys)
    assert code == 1
    assert not _kinds(doc, "missing-adapter")  # not "write a custom runner for it"
    assert any(f"did you mean {meant!r}?" in f["message"] for f in doc["findings"])


def test_a_project_word_that_a_provider_produces_is_never_questioned(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = make_repo(tmp_path / "ws", {"README.md": "x\n"})
    make_change(
        root,
        "c",
        "version: 3\nrequires: [tests]\n",
        'version: 1\nproviders:\n  tests:\n    adapter: command\n    command: ["true"]\n',
    )
    capsys.readouterr()
    assert main(["prove", "c", "--root", str(root)]) == 0


@pytest.mark.parametrize("envelope", [True, False])
def test_a_custom_runner_whose_envelope_cites_is_not_asked_to_list_the_claim(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], envelope: bool
) -> None:
    """Its envelope may carry citations: only a run can tell what it checked."""
    root = make_repo(tmp_path / "ws", {"check.py": "print('{}')\n"})
    make_change(
        root,
        "c",
        "version: 3\nclaims:\n  links:\n    statement: no dead link\n    requires: [link-check]\n",
        "version: 1\nproviders:\n  links:\n    adapter: command\n    capability: link-check\n"
        f"    command: [python3, check.py]\n    envelope: {str(envelope).lower()}\n",
    )
    _code, doc = _doctor(root, capsys)
    assert bool(_kinds(doc, "claim-not-cited")) is not envelope, doc["findings"]

"""evidence doctor: what is unresolved, why, and the command that resolves it."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from bootstrap_helpers import CHANGE, cli, workspace
from sandbox_helpers import commit_all, git, make_repo

from changeloop.detect.context import load_context
from changeloop.detect.doctor import diagnose
from changeloop.model import Provider
from changeloop.workspace.discovery import find_change


def doctor(capsys: pytest.CaptureFixture[str], root: Path) -> tuple[int, dict[str, Any]]:
    code, doc, _ = cli(capsys, "evidence", "doctor", CHANGE, "--json", "--root", str(root))
    assert doc is not None and set(doc) >= {"version", "root", "change", "findings", "unresolved"}
    return code, doc


def test_missing_adapter_playbook_resolves_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = workspace(tmp_path, {"pyproject.toml": '[project]\nname = "x"\n'})
    code, doc = doctor(capsys, root)
    assert code == 1 and doc["unresolved"] == 1
    kinds = [(f["kind"], f["capability"], f["repository"]) for f in doc["findings"]]
    assert kinds == [("missing-adapter", "test", "self")]
    finding = doc["findings"][0]
    # Bootstrap never edits the project's own configuration: the fix is wiring in
    # execution.yaml, changeloop's own file; no editor is opened, the text to add is given.
    assert finding["playbook_command"] is None
    assert finding["edit"]["path"] == f"openspec/changes/{CHANGE}/execution.yaml"
    assert "unittest" in finding["suggested_action"] and "pytest" in finding["suggested_action"]
    assert "[python3, -m, unittest, -v]" in finding["edit"]["add"]
    (root / f"openspec/changes/{CHANGE}/execution.yaml").write_text(
        "version: 1\nproviders:\n  test:\n    adapter: test-discovery\n"
        "    command: [python3, -m, unittest, -v]\n    format: unittest\n"
    )
    code, doc = doctor(capsys, root)
    assert (code, doc["unresolved"], doc["findings"]) == (0, 0, [])
    assert (root / "pyproject.toml").read_text() == '[project]\nname = "x"\n'


def test_no_tests_declared_is_informational(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = workspace(
        tmp_path,
        {},
        evidence="version: 3\nrequires: [static-analysis]\n",
        execution="version: 1\nproviders:\n  static-analysis:\n"
        '    adapter: command\n    command: ["true"]\n',
    )
    code, doc = doctor(capsys, root)
    assert code == 0 and doc["unresolved"] == 0
    assert [(f["kind"], f["severity"]) for f in doc["findings"]] == [("no-tests-declared", "info")]


def test_playwright_without_its_package_is_a_missing_tool(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = workspace(
        tmp_path,
        {
            "package.json": '{"devDependencies": {"@playwright/test": "1.65.1"}}',
            "package-lock.json": "{}",
        },
        evidence="version: 3\nrequires: [browser]\n",
    )
    code, doc = doctor(capsys, root)
    assert code == 1
    [f] = doc["findings"]
    assert f["kind"] == "tool-missing" and f["playbook_command"] == "npm ci"
    assert "@playwright/test" in f["message"]


def test_pytest_addopts_junitxml_is_not_honoured(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = workspace(tmp_path, {"pytest.ini": "[pytest]\naddopts = --junitxml=out/j.xml\n"})
    code, doc = doctor(capsys, root)
    assert code == 1
    assert [f["kind"] for f in doc["findings"]] == ["config-not-honoured"]


def test_vitest_custom_reporters_are_not_honoured(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = workspace(
        tmp_path,
        {
            "package.json": '{"devDependencies": {"vitest": "3.2.4"}}',
            "node_modules/vitest/package.json": '{"version": "3.2.4"}',
            "vitest.config.ts": "export default { test: { reporters: ['junit'] } }\n",
        },
    )
    code, doc = doctor(capsys, root)
    assert code == 1 and [f["kind"] for f in doc["findings"]] == ["config-not-honoured"]


def test_contract_digest_and_external_misconfiguration(tmp_path: Path) -> None:
    root = workspace(tmp_path, {}, evidence="version: 3\nrequires: [cross-repo-contract, review]\n")
    ctx = load_context(root, find_change(root, CHANGE))
    providers = {
        "cross-repo-contract": Provider(
            name="cross-repo-contract",
            adapter="contract-digest",
            capability="cross-repo-contract",
            contract={"self": "api.json"},
        ),
        "review": Provider(name="review", adapter="external", capability="review"),
    }
    kinds = sorted(f.kind for f in diagnose(ctx, providers))
    assert kinds == ["contract-paths-missing", "external-key-missing", "no-tests-declared"]


def test_unknown_change_is_one_json_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = workspace(tmp_path, {})
    code, doc, _ = cli(capsys, "evidence", "doctor", "nope", "--json", "--root", str(root))
    assert doc is not None
    assert code == 2 and doc["errors"] and doc["findings"] == []


def test_install_commands_cd_into_a_repository_whose_path_has_a_space(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every pasted ``cd`` quotes the repository's path: ``cd my web && …`` would fail."""
    root = workspace(
        tmp_path,
        {
            "my web/package.json": '{"name": "w", "devDependencies": {"vitest": "^4"}}',
            "my web/package-lock.json": '{"lockfileVersion": 3}',
        },
        evidence='version: 3\nrepositories: {web: "my web"}\nrequires: [test]\n',
        execution="version: 1\nproviders:\n  test:\n    adapter: command\n"
        "    repository: web\n    command: [npx, vitest, run]\n",
    )
    code, doc = doctor(capsys, root)
    assert code == 1
    missing = [f for f in doc["findings"] if f["kind"] == "tool-missing"]
    assert [f["repository"] for f in missing] == ["web"]
    install = "npm ci" if shutil.which("npm") else "npx -y npm ci"
    assert missing[0]["playbook_command"] == f"(cd 'my web' && {install})"


@pytest.mark.parametrize(
    ("argv", "tool", "command"),
    [
        ("[cargo, test]", "cargo", "curl --proto '=https' -sSf https://sh.rustup.rs | sh"),
        ("[node, --test]", "node", None),
    ],
)
def test_a_command_whose_program_is_not_on_path_is_a_missing_tool(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    argv: str,
    tool: str,
    command: str | None,
) -> None:
    root = workspace(
        tmp_path / "ws",
        {},
        execution=f"version: 1\nproviders:\n  test:\n    adapter: command\n    command: {argv}\n",
    )
    empty = tmp_path / "bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))  # a real PATH without the program
    code, doc = doctor(capsys, root)
    assert code == 1
    assert [(f["kind"], f["message"], f["playbook_command"]) for f in doc["findings"]] == [
        ("tool-missing", f"provider test runs {tool} but no `{tool}` is on PATH", command)
    ]


def test_an_uninitialized_submodule_is_a_note_with_the_command_that_checks_it_out(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    allow = ("-c", "protocol.file.allow=always")
    upstream = make_repo(tmp_path / "upstream", {"data.txt": "fixture\n"})
    root = workspace(
        make_repo(tmp_path / "ws", {"README.md": "r\n"}),
        evidence="version: 3\nrequires: [static-analysis]\n",
        execution="version: 1\nproviders:\n  static-analysis:\n"
        '    adapter: command\n    command: ["true"]\n',
    )
    git(root, *allow, "submodule", "add", "-q", upstream.as_uri(), "vendor/lib")
    commit_all(root, "submodule")
    code, doc = doctor(capsys, root)
    assert "submodule-uninitialized" not in [f["kind"] for f in doc["findings"]]

    git(root, "submodule", "deinit", "-q", "-f", "vendor/lib")  # the folder is empty now
    code, doc = doctor(capsys, root)
    notes = [f for f in doc["findings"] if f["kind"] == "submodule-uninitialized"]
    assert code == 0 and doc["unresolved"] == 0  # a note: the user's checkout is empty too
    assert len(notes) == 1 and notes[0]["severity"] == "info"
    assert "vendor/lib" in notes[0]["message"]
    assert notes[0]["playbook_command"] == "git submodule update --init --recursive"

    git(root, *allow, "submodule", "update", "-q", "--init", "--recursive")
    code, doc = doctor(capsys, root)
    assert "submodule-uninitialized" not in [f["kind"] for f in doc["findings"]]

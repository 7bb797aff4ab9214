"""Playwright's own output never lands in the user's tree.

`test-results/.last-run.json` at the repository root made the next receipts say
`dirty: true` and re-ran an unchanged browser provider. Proving examples/web
twice, as a user would (its own git repository, `--sandbox none`), must leave
the checkout clean and reuse every receipt the second time.
"""

from __future__ import annotations

import base64
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from browser_helpers import EXAMPLE_WEB, require_browser
from port_helpers import free_port
from prove_helpers import git, make_repo, prove_json

from changeloop.model import Provider
from changeloop.providers.playwright_argv import OUTPUT_DIR, effective_command, output_env, run_argv


def _user_copy_of_the_example(tmp: Path, port: int) -> Path:
    """examples/web as its own repository: node_modules ignored, test-results/ not."""
    root = tmp / "web"
    shutil.copytree(
        EXAMPLE_WEB,
        root,
        ignore=shutil.ignore_patterns("node_modules", ".changeloop", "test-results"),
    )
    (root / "node_modules").symlink_to(EXAMPLE_WEB / "node_modules")
    (root / ".gitignore").write_text("node_modules\n")
    execution = root / "openspec" / "changes" / "add-greeting" / "execution.yaml"
    execution.write_text(execution.read_text().replace("4173", str(port)))
    make_repo(root)  # git init + commit everything
    return root


def _receipt_repositories(root: Path, doc: dict[str, Any]) -> list[dict[str, Any]]:
    """The ``repositories`` block of every receipt the document points at."""
    out = []
    for provider in doc["providers"]:
        for receipt in provider["receipts"]:
            envelope = json.loads((root / str(receipt["path"])).read_text())
            statement = json.loads(base64.b64decode(envelope["payload"]))
            out.append(statement["predicate"]["changeloop"]["repositories"])
    return out


@pytest.mark.browser
def test_second_prove_of_the_unchanged_example_is_fully_cached(tmp_path: Path, capsys: Any) -> None:
    require_browser()
    root = _user_copy_of_the_example(tmp_path, free_port())
    code, first = prove_json(root, "add-greeting", capsys=capsys)
    assert code == 0, first
    assert [p["state"] for p in first["providers"]] == ["ran"]
    assert git(root, "status", "--porcelain", "--untracked-files=all") == ""
    assert not (root / "test-results").exists()

    code, second = prove_json(root, "add-greeting", capsys=capsys)
    assert code == 0, second
    assert [p["state"] for p in second["providers"]] == ["cached"], second["providers"]
    repositories = _receipt_repositories(root, second)
    assert len(repositories) == 2  # browser and accessibility
    assert all(r["self"]["dirty"] is False for r in repositories), repositories
    assert git(root, "status", "--porcelain", "--untracked-files=all") == ""


@pytest.mark.browser
def test_a_wrapper_command_leaves_no_last_run_file_in_the_tree(tmp_path: Path, capsys: Any) -> None:
    """`npm run e2e` cannot be given `--output`; the environment still moves `.last-run.json`."""
    require_browser()
    root = _user_copy_of_the_example(tmp_path, free_port())
    execution = root / "openspec" / "changes" / "add-greeting" / "execution.yaml"
    execution.write_text(
        execution.read_text().replace(
            "command: [npx, playwright, test]",
            "command: [npm, run, e2e, --, --reporter=json, --project, chromium]",
        )
    )
    git(root, "commit", "-q", "-am", "wrapper")
    code, doc = prove_json(root, "add-greeting", capsys=capsys)
    assert code == 0, doc
    assert git(root, "status", "--porcelain", "--untracked-files=all") == ""
    runs = list((root / ".changeloop" / "runs").glob("*/browser/playwright-output/.last-run.json"))
    assert len(runs) == 1 and json.loads(runs[0].read_text())["status"] == "passed"


def _provider(command: tuple[str, ...]) -> Provider:
    return Provider(
        name="e2e",
        adapter="playwright",
        capability="browser",
        repository="web",
        command=command,
        project="chromium",
    )


def test_output_goes_to_the_run_directory_before_any_double_dash(tmp_path: Path) -> None:
    out = tmp_path / "run" / OUTPUT_DIR
    argv = run_argv(_provider(("npx", "playwright", "test", "--", "a.spec.ts")), out)
    assert argv == (
        "npx", "playwright", "test", "--reporter=json", "--project", "chromium",
        "--output", str(out), "--", "a.spec.ts",
    )  # fmt: skip
    # the fingerprint's command has no per-run path
    assert "--output" not in (effective_command(_provider(("npx", "playwright", "test"))) or ())


def test_an_output_the_command_names_is_kept(tmp_path: Path) -> None:
    for given in (("--output", "mine"), ("--output=mine",)):
        argv = run_argv(_provider(("npx", "playwright", "test", *given)), tmp_path)
        assert argv is not None and str(tmp_path) not in argv
        assert [a for a in argv if a.startswith("--output")] == [given[0]]


def test_a_wrapper_keeps_its_argv_and_the_environment_can_override(tmp_path: Path) -> None:
    assert run_argv(_provider(("npm", "run", "e2e")), tmp_path) == ("npm", "run", "e2e")
    env = output_env({}, tmp_path)
    assert env["PLAYWRIGHT_LAST_RUN_OUTPUT_FILE"] == str(tmp_path / OUTPUT_DIR / ".last-run.json")
    assert env["PLAYWRIGHT_HTML_OUTPUT_DIR"] == str(tmp_path / "playwright-report")
    mine = output_env({"PLAYWRIGHT_LAST_RUN_OUTPUT_FILE": "/elsewhere/x.json"}, tmp_path)
    assert mine["PLAYWRIGHT_LAST_RUN_OUTPUT_FILE"] == "/elsewhere/x.json"

"""Odd inputs are refusals that name the file, line and key — never exit 3 (docs/processes.md).

Real CLI, real files: a symlink loop or a FIFO where a config file belongs,
integers no JSON reader keeps exact, absurd durations, and a repository git
refuses because another user owns it.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from prove_helpers import make_change, make_repo

from changeloop.cli.main import main

EVIDENCE = """\
version: 3
claims:
  greeting:
    statement: says hello
    requires: [test]
"""


def _execution(extra: str = "", timeout: str = "60000") -> str:
    return f"""\
version: 1
providers:
  test:
    adapter: command
    capability: test
    claims: [greeting]
    command: [sh, -c, "exit 0"]
    timeoutMs: {timeout}
{extra}"""


def _run(argv: list[str], capsys: Any) -> tuple[int, dict[str, Any], str]:
    capsys.readouterr()
    code = main([*argv, "--json"])
    captured = capsys.readouterr()
    return code, json.loads(captured.out), captured.err


def _workspace(tmp_path: Path, execution: str | None) -> Path:
    root = make_repo(tmp_path / "ws")
    make_change(root, "hello", EVIDENCE, execution)
    return root


def _errors(doc: dict[str, Any]) -> list[dict[str, Any]]:
    errors: list[dict[str, Any]] = doc["errors"]
    assert errors
    return errors


@pytest.mark.parametrize("name", ["evidence.yaml", "execution.yaml"])
def test_config_symlink_loop_is_a_refusal(tmp_path: Path, capsys: Any, name: str) -> None:
    root = _workspace(tmp_path, _execution())
    target = root / "openspec" / "changes" / "hello" / name
    target.unlink()
    target.symlink_to(name)  # points at itself
    for argv in (["prove", "hello", "--dry-run"], ["evidence", "detect", "hello"]):
        code, doc, err = _run([*argv, "--root", str(root)], capsys)
        assert code == 2, (argv, doc, err)
        (error,) = _errors(doc)
        assert error["path"] == f"openspec/changes/hello/{name}"
        assert "symbolic links" in error["message"]
        assert "Traceback" not in err and "unexpected error" not in err


def test_config_fifo_is_a_refusal_not_a_hang(tmp_path: Path, capsys: Any) -> None:
    root = _workspace(tmp_path, None)
    evidence = root / "openspec" / "changes" / "hello" / "evidence.yaml"
    evidence.unlink()
    os.mkfifo(evidence)
    code, doc, _ = _run(["prove", "hello", "--dry-run", "--root", str(root)], capsys)
    assert code == 2
    (error,) = _errors(doc)
    assert error["code"] == "not_a_regular_file"
    assert error["path"] == "openspec/changes/hello/evidence.yaml"


def test_integer_beyond_2_53_is_refused_when_read(tmp_path: Path, capsys: Any) -> None:
    """``timeoutMs: 9007199254740993`` must not pass --dry-run (it broke canonicalization)."""
    root = _workspace(tmp_path, _execution(timeout="9007199254740993"))
    code, doc, err = _run(["prove", "hello", "--dry-run", "--root", str(root)], capsys)
    assert code == 2, (doc, err)
    (error,) = _errors(doc)
    assert error["code"] == "integer_out_of_range"
    assert error["path"] == "openspec/changes/hello/execution.yaml"
    assert error["line"] == 8
    assert "providers.test.timeoutMs" in error["message"]
    assert "9007199254740993" in error["message"]


def test_negative_integer_beyond_2_53_in_evidence(tmp_path: Path, capsys: Any) -> None:
    root = _workspace(tmp_path, None)
    evidence = root / "openspec" / "changes" / "hello" / "evidence.yaml"
    evidence.write_text("version: -9007199254740993\n")
    code, doc, _ = _run(["prove", "hello", "--dry-run", "--root", str(root)], capsys)
    assert code == 2
    (error,) = _errors(doc)
    assert error["code"] == "integer_out_of_range"
    assert (error["path"], error["line"]) == ("openspec/changes/hello/evidence.yaml", 1)
    assert "version" in error["message"]


def test_largest_exact_integer_still_reads(tmp_path: Path, capsys: Any) -> None:
    """The bound is 2^53-1 itself: that value is an ordinary (if absurd) duration."""
    root = _workspace(tmp_path, _execution(timeout=str(2**53 - 1)))
    code, doc, _ = _run(["prove", "hello", "--dry-run", "--root", str(root)], capsys)
    assert code == 2
    (error,) = _errors(doc)
    assert error["code"] == "duration_out_of_range"  # not an integer refusal


@pytest.mark.parametrize(
    ("extra", "timeout", "key", "line"),
    [
        ("", "1000000000000", "providers.test.timeoutMs", 8),
        (
            """\
  ext:
    adapter: external
    capability: review
    receipts: receipts/
    maxAge: 1000000000000000
    ci:
      issuer: ci
      publicKey: "x"
""",
            "60000",
            "providers.ext.maxAge",
            13,
        ),
        (
            """\
  ext:
    adapter: external
    capability: review
    receipts: receipts/
    maxAge: 99999999999w
    ci:
      issuer: ci
      publicKey: "x"
""",
            "60000",
            "providers.ext.maxAge",
            13,
        ),
        (
            """\
    services: [web]
services:
  web:
    command: [sh, -c, "sleep 1"]
    readiness:
      url: http://127.0.0.1:45678/
      timeoutMs: 999999999999
""",
            "60000",
            "services.web.readiness.timeoutMs",
            15,
        ),
    ],
    ids=["timeoutMs", "maxAge-int", "maxAge-weeks", "readiness"],
)
def test_absurd_durations_are_refused(
    tmp_path: Path, capsys: Any, extra: str, timeout: str, key: str, line: int
) -> None:
    root = _workspace(tmp_path, _execution(extra, timeout))
    code, doc, err = _run(["prove", "hello", "--dry-run", "--root", str(root)], capsys)
    assert code == 2, (doc, err)
    errors = [e for e in _errors(doc) if e["code"] == "duration_out_of_range"]
    assert len(errors) == 1, doc
    assert key in errors[0]["message"] and "OverflowError" not in errors[0]["message"]
    assert (errors[0]["path"], errors[0]["line"]) == ("openspec/changes/hello/execution.yaml", line)
    assert "fix" in errors[0]


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give the repository to another uid")
def test_dubious_ownership_is_gits_own_reason(
    tmp_path: Path, capsys: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _workspace(tmp_path, _execution())
    subprocess.run(["git", "add", "-A"], cwd=root, check=True)
    subprocess.run(["git", "commit", "-qm", "change"], cwd=root, check=True)
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))  # no global safe.directory from the real HOME
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.delenv("GIT_CONFIG_GLOBAL", raising=False)
    subprocess.run(["chown", "-R", "54321:54321", str(root)], check=True)
    code, doc, err = _run(["prove", "hello", "--root", str(root)], capsys)
    assert code == 2, (doc, err)
    (error,) = _errors(doc)
    assert "dubious ownership" in error["message"]
    assert "not a git work tree" not in error["message"]
    assert f"safe.directory {root}" in error["fix"]
    assert "Traceback" not in err


@pytest.mark.parametrize("damage", ["state-is-a-file", "runs-is-a-file"])
def test_state_path_errors_cross_task_groups_as_clean_answers(
    tmp_path: Path, capsys: Any, damage: str
) -> None:
    """Errors raised inside anyio task groups arrive wrapped in an ExceptionGroup:
    the CLI boundary still answers with one document naming the path, never exit 3."""
    root = _workspace(tmp_path, _execution())
    subprocess.run(["git", "add", "-A"], cwd=root, check=True)
    subprocess.run(["git", "commit", "-qm", "change"], cwd=root, check=True)
    state = root / ".changeloop"
    if damage == "state-is-a-file":
        state.write_text("not a directory\n")
    else:
        state.mkdir()
        (state / "runs").write_text("not a directory\n")
    code, doc, err = _run(["prove", "hello", "--root", str(root)], capsys)
    assert code in (1, 2), (code, doc, err)
    assert "Traceback" not in err and "unexpected error" not in err
    (error,) = _errors(doc)
    assert ".changeloop" in error["path"]
    assert doc["status"] == "not-proven" and doc["change"] == "hello"

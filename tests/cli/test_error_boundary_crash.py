"""Our own bugs crash at the one boundary (exit 3, a crash log), and never become a verdict.

A bug is injected where a fault would sit — the command adapter's judging
raises ``KeyError``/``TypeError`` — and the real CLI runs a real prove: the
answer is exit 3, one ``--json`` document in prove's shape naming the crash
log (which holds the traceback), nothing on the terminal that looks like a
traceback, and no receipt for the provider (an ``inconclusive`` receipt
would be a bug turned into evidence). A verb's usage error prints that
verb's usage, not the top-level one.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from prove_helpers import make_change, make_repo

from changeloop.cli.main import main
from changeloop.providers import command


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = make_repo(tmp_path / "ws", {"a.txt": "a\n"})
    make_change(
        root,
        "c1",
        "version: 3\nclaims:\n  a:\n    statement: a\n    requires: [test]\n",
        "version: 1\nproviders:\n  test:\n    adapter: command\n    claims: [a]\n"
        '    command: ["true"]\n',
    )
    return root


@pytest.mark.parametrize("bug", [KeyError, TypeError])
def test_an_adapter_bug_crashes_with_exit_3_and_writes_no_receipt(
    workspace: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    bug: type[Exception],
) -> None:
    def broken(*_args: object, **_kwargs: object) -> None:
        raise bug("injected: a bug in reading the result")

    monkeypatch.setattr(command, "judge", broken)
    capsys.readouterr()
    code = main(["prove", "c1", "--root", str(workspace), "--json"])
    out, err = capsys.readouterr()
    assert code == 3, err
    doc = json.loads(out)  # exactly one document, in prove's shape
    assert doc["status"] == "not-proven" and doc["change"] == "c1" and doc["providers"] == []
    (error,) = doc["errors"]
    assert error["code"] == "internal_error"
    log = Path(error["path"])
    assert f"{bug.__name__}: 'injected" in log.read_text() or bug.__name__ in log.read_text()
    assert "Traceback" in log.read_text() and "Traceback" not in err
    assert "a bug, not your mistake" in err and str(log) in err
    latest = workspace / ".changeloop" / "receipts" / "c1"
    assert not list(latest.glob("*.json")), "a bug became a receipt"


def test_without_json_the_crash_is_said_on_stderr_only(
    workspace: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def broken(*_args: object, **_kwargs: object) -> None:
        raise KeyError("exitCode")

    monkeypatch.setattr(command, "judge", broken)
    capsys.readouterr()
    assert main(["prove", "c1", "--root", str(workspace)]) == 3
    out, err = capsys.readouterr()
    assert out == ""
    assert "changeloop hit an unexpected error" in err and "Traceback" not in err


@pytest.mark.parametrize(
    ("argv", "usage"),
    [
        (["prove", "c1", "--json", "--bogus"], "usage: changeloop prove "),
        (["gate", "c1", "--bogus", "--json"], "usage: changeloop gate "),
        (["evidence", "doctor", "c1", "--bogus", "--json"], "usage: changeloop evidence doctor "),
    ],
)
def test_an_unknown_flag_prints_the_verbs_own_usage(
    workspace: Path, capsys: pytest.CaptureFixture[str], argv: list[str], usage: str
) -> None:
    capsys.readouterr()
    assert main([*argv, "--root", str(workspace)]) == 2
    out, err = capsys.readouterr()
    assert usage in err and "usage: changeloop [-h]" not in err
    doc = json.loads(out)
    (error,) = doc["errors"]
    assert error["code"] == "usage" and "--bogus" in error["message"]
    assert error["fix"] == f"see `{usage.removeprefix('usage: ').strip()} --help`"

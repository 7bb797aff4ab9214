"""A user's mistake is a message with a fix and an exit code, never a traceback."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from prove_helpers import make_change, make_repo

from changeloop.cli.main import main


def _run(*argv: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["changeloop", *argv], cwd=cwd, capture_output=True, text=True, check=False, timeout=120
    )


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = make_repo(tmp_path / "ws", {"a.txt": "a\n"})
    make_change(
        root,
        "c1",
        "version: 3\nrequires: [t]\n",
        'version: 1\nproviders:\n  t: {adapter: command, command: ["true"]}\n',
    )
    return root


@pytest.mark.parametrize(
    ("argv", "code", "words"),
    [
        (["prove", "nope"], 2, "c1"),
        (["prove", "c1", "--sign-key", "/no/such.key"], 2, "cannot read private key"),
        (["prove", "c1", "--jobs", "0"], 2, "at least 1"),
        (["keygen", "--out", "/proc/no/such/dir"], 2, "cannot write the key pair"),
        (["receipt", "verify", "missing.json", "--public-key", "missing.pub"], 2, "missing.pub"),
        (["evidence", "doctor", "nope"], 2, "c1"),
    ],
)
def test_mistakes_get_a_message_not_a_traceback(
    workspace: Path, argv: list[str], code: int, words: str
) -> None:
    result = _run(*argv, cwd=workspace)
    assert result.returncode == code, result.stderr
    assert words in result.stderr
    assert "Traceback" not in result.stderr and "unexpected error" not in result.stderr


def test_errors_in_json_mode_are_one_document(workspace: Path) -> None:
    result = _run("prove", "c1", "--sign-key", "/no/such.key", "--json", cwd=workspace)
    doc = json.loads(result.stdout)
    assert doc["errors"][0]["code"] == "key_refused"
    assert result.returncode == 2


def test_root_is_accepted_before_and_after_the_verb(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    assert main(["--root", str(workspace), "prove", "c1", "--dry-run"]) == 0
    assert main(["prove", "c1", "--dry-run", "--root", str(workspace)]) == 0


def test_version_and_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--version"]) == 0
    assert "changeloop" in capsys.readouterr().out
    assert main(["prove", "--help"]) == 0
    out = capsys.readouterr().out
    assert "exit codes" in out and "--sandbox" in out


def test_receipt_refusals_keep_their_verbs_json_shape(workspace: Path) -> None:
    bad = workspace / "bad.json"
    bad.write_text('{"payload": "", "payload": ""}')
    pub = workspace.parent / "k"  # keygen refuses --out where git would not ignore the key
    assert _run("keygen", "--out", str(pub), cwd=workspace).returncode == 0
    imported = _run(
        "receipt",
        "import",
        str(bad),
        "--change",
        "c1",
        "--public-key",
        str(pub / "changeloop.pub"),
        "--json",
        cwd=workspace,
    )
    doc = json.loads(imported.stdout)
    assert imported.returncode == 1
    assert doc["imported"] == [] and doc["change"] == "c1" and doc["errors"]
    verified = _run(
        "receipt", "verify", str(bad), "--public-key", "missing.pub", "--json", cwd=workspace
    )
    doc = json.loads(verified.stdout)
    assert verified.returncode == 2
    assert doc["valid"] is False and doc["errors"][0]["path"] == "missing.pub"


def test_import_of_a_missing_file_is_a_refusal_that_copies_nothing(workspace: Path) -> None:
    keys = workspace.parent / "k"  # keygen refuses --out where git would not ignore the key
    assert _run("keygen", "--out", str(keys), cwd=workspace).returncode == 0
    result = _run(
        "receipt",
        "import",
        "missing.json",
        "--change",
        "c1",
        "--public-key",
        str(keys / "changeloop.pub"),
        "--json",
        cwd=workspace,
    )
    assert result.returncode == 1
    doc = json.loads(result.stdout)
    assert doc["imported"] == [] and doc["errors"][0]["code"] == "unreadable"
    assert not (workspace / "openspec" / "changes" / "c1" / "receipts").exists()

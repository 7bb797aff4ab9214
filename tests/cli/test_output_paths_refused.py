"""An output path that cannot be written as asked is refused before anything runs (exit 2).

``prove --publish <a regular file>`` used to run every provider, then lose the
verdict to "filesystem error: Not a directory"; ``summary --out <dir>`` and
``receipt sign --out <dir>`` exited 1 after doing the work.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import repo_helpers

from changeloop.cli.main import main


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    return repo_helpers.basic_example(tmp_path / "ws")


@pytest.fixture
def key(tmp_path: Path) -> Path:
    return repo_helpers.keygen_key(tmp_path / "keys")


@pytest.mark.parametrize("where", ["file", "file/sub"])
def test_prove_publish_into_a_regular_file_runs_nothing(
    ws: Path, key: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], where: str
) -> None:
    (tmp_path / "file").write_text("not a directory\n")
    target = tmp_path / where
    argv = ["prove", "add-greeting", "--root", str(ws), "--sign-key", str(key)]
    code = main([*argv, "--publish", str(target), "--json"])
    captured = capsys.readouterr()
    assert code == 2, captured.err
    doc = json.loads(captured.out)
    [error] = doc["errors"]
    assert error["code"] == "publish_not_a_directory"
    assert error["path"] == str(tmp_path / "file")
    assert "is a file, not a directory" in error["message"] and error["fix"]
    assert doc["providers"] == [] and doc["status"] == "not-proven"
    assert not (ws / ".changeloop" / "runs").exists() or not any(
        (ws / ".changeloop" / "runs").iterdir()
    )  # nothing ran
    assert (tmp_path / "file").read_text() == "not a directory\n"


def test_prove_publish_into_a_new_directory_still_publishes(
    ws: Path, key: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "new" / "cache"
    argv = ["prove", "add-greeting", "--root", str(ws), "--sign-key", str(key)]
    assert main([*argv, "--publish", str(target), "--json"]) == 0, capsys.readouterr().err
    assert list(target.glob("*/*.json"))


def _summary(ws: Path, key: Path, out: Path) -> list[str]:
    return ["summary", "add-greeting", "--root", str(ws), "--sign-key", str(key), "--out", str(out)]


def _sign(ws: Path, key: Path, out: Path) -> list[str]:
    return [
        *("receipt", "sign", "--root", str(ws), "--change", "add-greeting"),
        *("--claims", "greeting", "--key", str(key), "--issuer", "ci", "--out", str(out)),
    ]


@pytest.mark.parametrize("verb", [_summary, _sign])
@pytest.mark.parametrize("where", ["dir", "file/r.json"])
def test_out_that_cannot_be_a_file_is_refused_up_front(
    ws: Path,
    key: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    verb: object,
    where: str,
) -> None:
    (tmp_path / "dir").mkdir()
    (tmp_path / "file").write_text("x\n")
    assert callable(verb)
    code = main([*verb(ws, key, tmp_path / where), "--json"])
    captured = capsys.readouterr()
    assert code == 2, captured.err
    [error] = json.loads(captured.out)["errors"]
    assert error["code"] == "out_not_writable" and "--out" in error["message"]
    assert error["path"] == str(tmp_path / where.partition("/")[0])
    assert error["fix"]
    assert list((tmp_path / "dir").iterdir()) == []
    assert "bug" not in captured.err


@pytest.mark.parametrize("verb", [_summary, _sign])
def test_out_to_a_new_file_still_writes(
    ws: Path, key: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], verb: object
) -> None:
    assert callable(verb)
    out = tmp_path / "r.json"
    assert main([*verb(ws, key, out), "--json"]) in (0, 1), capsys.readouterr().err
    assert out.read_bytes().startswith(b"{")

"""An empty or malformed name on the command line is refused before anything runs (exit 2).

``receipt sign --issuer ''`` used to crash (exit 3) and ``prove --issuer ''`` ran
every provider, then could not seal; ``--claims nosuch`` signed a receipt no
claim of the change could use.
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


def _sign(ws: Path, key: Path, *extra: str) -> list[str]:
    return [
        "receipt",
        "sign",
        "--root",
        str(ws),
        "--change",
        "add-greeting",
        "--key",
        str(key),
        "--json",
        *extra,
    ]


@pytest.mark.parametrize(
    ("extra", "flag"),
    [
        (["--claims", "greeting", "--issuer", ""], "--issuer"),
        (["--claims", "greeting", "--issuer", "   "], "--issuer"),
        (["--claims", "greeting", "--issuer", "ci", "--capability="], "--capability"),
        (["--claims", "greeting", "--issuer", "ci", "--capability", "a b"], "--capability"),
        (["--claims", "greeting", "--issuer", "ci", "--capability", "-x"], "--capability"),
        (["--claims", "greeting", "--issuer", "ci", "--provider", ""], "--provider"),
    ],
)
def test_receipt_sign_refuses_an_empty_or_malformed_name(
    ws: Path,
    key: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    extra: list[str],
    flag: str,
) -> None:
    out = tmp_path / "r.json"
    code = main([*_sign(ws, key, "--out", str(out)), *extra])
    captured = capsys.readouterr()
    assert code == 2, captured.err
    doc = json.loads(captured.out)
    [error] = doc["errors"]
    assert error["code"] == "usage" and flag in error["message"]
    assert "bug" not in captured.err
    assert not out.exists()


@pytest.mark.parametrize(
    ("claims", "words"),
    [
        ("nosuch", "'nosuch'"),
        ("greeting,nosuch", "'nosuch'"),
        ("", "names no claim"),
        (" , ", "names no claim"),
    ],
)
def test_receipt_sign_warns_about_claims_the_change_does_not_declare(
    ws: Path, key: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], claims: str, words: str
) -> None:
    """Signed all the same (a verifier binds claims; a signer may sign a receipt meant to be
    refused), with a warning naming the claims that exist."""
    out = tmp_path / "r.json"
    code = main([*_sign(ws, key, "--claims", claims, "--issuer", "ci", "--out", str(out))])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert json.loads(captured.out)["path"] == str(out) and out.is_file()
    warning = next(line for line in captured.err.splitlines() if line.startswith("warning:"))
    assert words in warning and "declared: greeting" in warning


def test_receipt_sign_with_good_names_still_signs(
    ws: Path, key: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "r.json"
    argv = _sign(ws, key, "--claims", "greeting", "--issuer", "ci", "--capability", "review")
    assert main([*argv, "--out", str(out)]) == 0, capsys.readouterr().err
    assert json.loads(capsys.readouterr().out)["path"] == str(out)


def test_prove_with_an_empty_issuer_runs_nothing(
    ws: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["prove", "add-greeting", "--root", str(ws), "--issuer", "", "--json"])
    captured = capsys.readouterr()
    assert code == 2, captured.err
    doc = json.loads(captured.out)
    assert doc["errors"][0]["code"] == "usage" and "--issuer" in doc["errors"][0]["message"]
    assert doc["providers"] == []
    assert not (ws / ".changeloop" / "runs").exists()  # nothing ran

"""`receipt sign` → `receipt import` → the external adapter accepts it, for this content only."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import anyio
import pytest
from receipts_helpers import commit_all, make_workspace, run_context, write_files

from changeloop.cli.main import main
from changeloop.plan import build_plan
from changeloop.providers import external
from changeloop.signing.keys import load_private_key
from changeloop.workspace import discovery as workspace


@pytest.fixture
def ws(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[Path, Path]:
    keys = tmp_path / "keys"
    assert main(["keygen", "--out", str(keys)]) == 0
    root = tmp_path / "ws"
    make_workspace(root, pub_pem=(keys / "changeloop.pub").read_text())
    capsys.readouterr()
    return root, keys


def sign(root: Path, keys: Path, out: Path, *extra: str) -> int:
    return main(
        [
            "receipt",
            "sign",
            "--root",
            str(root),
            "--change",
            "add-review",
            "--claims",
            "auth-boundary",
            "--key",
            str(keys / "changeloop.key"),
            "--issuer",
            "github-actions",
            "--out",
            str(out),
            *extra,
        ]
    )


def external_status(root: Path) -> tuple[str, str | None]:
    plan = build_plan(root, workspace.find_change(root, "add-review"))
    outs = anyio.run(external.run, run_context(plan, "review", now=datetime.now(UTC)))
    return (outs[0].status, outs[0].reason) if outs else ("none", None)


def test_sign_import_then_external_accepts_for_this_content_only(
    ws: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root, keys = ws
    out = tmp_path / "review.json"
    assert sign(root, keys, out, "--url", "https://ci.example/1", "--json") == 0
    signed = json.loads(capsys.readouterr().out)
    assert set(signed["subjects"]) == {"api", "web"}
    assert external_status(root) == ("none", None)
    assert (
        main(
            ["receipt", "import", str(out), "--root", str(root), "--change", "add-review", "--json"]
        )
        == 0
    )
    imported = json.loads(capsys.readouterr().out)["imported"]
    assert imported[0]["id"] == signed["id"]
    copied = root / imported[0]["path"]
    assert copied.read_bytes() == out.read_bytes()
    assert external_status(root)[0] == "pass"
    write_files(root / "web", {"src/app.txt": "web v2\n"})
    commit_all(root / "web")
    status, reason = external_status(root)
    assert status == "fail" and "was made for content" in (reason or "")


def test_sign_fail_status_makes_external_fail(ws: tuple[Path, Path]) -> None:
    root, keys = ws
    out = root / "openspec/changes/add-review/receipts/no.json"
    assert sign(root, keys, out, "--status", "fail", "--reason", "auth check missing") == 0
    status, reason = external_status(root)
    assert status == "fail" and "auth check missing" in (reason or "")


def test_sign_to_stdout_writes_the_envelope(
    ws: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    root, keys = ws
    assert (
        main(
            [
                "receipt",
                "sign",
                "--root",
                str(root),
                "--change",
                "add-review",
                "--claims",
                "a,b",
                "--key",
                str(keys / "changeloop.key"),
                "--issuer",
                "alice",
            ]
        )
        == 0
    )
    env = json.loads(capsys.readouterr().out)
    assert env["payloadType"] == "application/vnd.in-toto+json" and len(env["signatures"]) == 1


def test_import_refusal_copies_nothing(
    ws: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root, keys = ws
    good = tmp_path / "good.json"
    assert sign(root, keys, good) == 0
    bad = tmp_path / "bad.json"
    bad.write_bytes(good.read_bytes()[:-30])
    code = main(
        ["receipt", "import", str(good), str(bad), "--root", str(root), "--change", "add-review"]
    )
    assert code == 1
    err = capsys.readouterr().err
    assert "bad.json" in err and "nothing was imported" in err
    assert not (root / "openspec/changes/add-review/receipts").exists()


def test_import_refuses_a_key_the_change_does_not_trust(
    ws: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root, _keys = ws
    other = tmp_path / "other"
    assert main(["keygen", "--out", str(other)]) == 0
    receipt = tmp_path / "r.json"
    assert sign(root, other, receipt) == 0
    capsys.readouterr()
    assert (
        main(["receipt", "import", str(receipt), "--root", str(root), "--change", "add-review"])
        == 1
    )
    assert "not a trusted key" in capsys.readouterr().err
    # ...unless the user vouches for it explicitly
    assert (
        main(
            [
                "receipt",
                "import",
                str(receipt),
                "--root",
                str(root),
                "--change",
                "add-review",
                "--public-key",
                str(other / "changeloop.pub"),
            ]
        )
        == 0
    )


def test_unknown_change_exits_2(ws: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    root, keys = ws
    assert (
        main(
            [
                "receipt",
                "sign",
                "--root",
                str(root),
                "--change",
                "nope",
                "--claims",
                "a",
                "--key",
                str(keys / "changeloop.key"),
                "--issuer",
                "x",
            ]
        )
        == 2
    )
    assert "add-review" in capsys.readouterr().err


def test_sign_refuses_a_non_ed25519_key(
    ws: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root, keys = ws
    assert load_private_key(keys / "changeloop.key")
    bad = tmp_path / "pub-as-key.pem"
    bad.write_bytes((keys / "changeloop.pub").read_bytes())
    assert (
        main(
            [
                "receipt",
                "sign",
                "--root",
                str(root),
                "--change",
                "add-review",
                "--claims",
                "a",
                "--key",
                str(bad),
                "--issuer",
                "x",
            ]
        )
        == 2
    )
    assert "not a private key" in capsys.readouterr().err

"""Signed strings reach the terminal escaped, in `prove` too (docs/threat-model.md).

A FAILED external receipt carries a signed `reason`; `prove` quotes it on its
board. An ANSI sequence in it (clear screen, recolour) or a bidi override must
arrive as visible escapes, never as raw control characters. The receipt is made
by the real `receipt sign` with the key the external provider trusts.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st
from receipts_helpers import make_workspace, pem_text
from repo_paths import REPO_ROOT

from changeloop.cli.main import main
from changeloop.signing.keys import generate_private_key, private_pem
from changeloop.text import escape_controls, escape_json_text

KEY = generate_private_key()
EVIL = "\x1b[2J\x1b[32mreviewer approved\x1b[0m\x9b2K\u202e"
ENTRY = "import sys; from changeloop.cli.main import main; sys.exit(main(sys.argv[1:]))"


def test_a_signed_reason_with_terminal_escapes_is_printed_escaped(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    make_workspace(root, pub_pem=pem_text(KEY))
    key = tmp_path / "ci.key"
    key.write_bytes(private_pem(KEY))
    key.chmod(0o600)
    receipt = tmp_path / "fail.json"
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
                "auth-boundary",
                "--key",
                str(key),
                "--issuer",
                "github-actions",
                "--status",
                "fail",
                "--reason",
                f"no{EVIL}",
                "--out",
                str(receipt),
            ]
        )
        == 0
    )
    assert (
        main(["receipt", "import", str(receipt), "--change", "add-review", "--root", str(root)])
        == 0
    )
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    for extra in ([], ["--json"]):
        result = subprocess.run(
            [sys.executable, "-c", ENTRY, "prove", "add-review", "--root", str(root), *extra],
            env=env,
            capture_output=True,
            text=True,
            check=False,
            timeout=120,
        )
        assert result.returncode == 1, result.stderr
        for stream in (result.stdout, result.stderr):
            assert not any(c in stream for c in "\x1b\x9b\u202e"), repr(stream)
        if extra:  # the value itself survives, as JSON escapes
            reasons = json.loads(result.stdout)["claims"]["auth-boundary"]["reasons"]
            assert any(EVIL in reason for reason in reasons), reasons
        else:
            assert "no\\x1b[2J" in result.stderr, result.stderr


@given(st.text())
def test_json_escaping_keeps_the_document_and_removes_terminal_controls(text: str) -> None:
    doc = {"k": text, text: [text]}
    out = escape_json_text(json.dumps(doc, ensure_ascii=False))
    assert json.loads(out) == doc
    assert not any(0x7F <= ord(c) <= 0x9F or 0xD800 <= ord(c) <= 0xDFFF for c in out)
    shown = escape_controls(text)
    assert not any(ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F for c in shown)
    assert shown == text or "\\" in shown

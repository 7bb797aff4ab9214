"""Signed strings reach the terminal escaped, in `prove` too (DESIGN.md §2.6).

A FAILED external receipt carries a signed `reason`; `prove` quotes it on its
board. An ANSI sequence in it (clear screen, recolour) or a bidi override must
arrive as visible escapes, never as raw control characters.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from receipts_helpers import identities, make_workspace, pem_text, signed, statement

from changeloop.keys import generate_private_key

KEY = generate_private_key()
EVIL = "\x1b[2J\x1b[32mreviewer approved\x1b[0m\x9b2K\u202e"


def test_a_signed_reason_with_terminal_escapes_is_printed_escaped(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    make_workspace(root, pub_pem=pem_text(KEY))
    stmt = statement(subjects=identities(root), status="fail", claims={"auth-boundary": "failed"})
    stmt["predicate"]["changeloop"]["reason"] = f"no{EVIL}"
    receipts = root / "openspec" / "changes" / "add-review" / "receipts"
    receipts.mkdir()
    (receipts / "r.json").write_bytes(signed(stmt, KEY))
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    entry = "import sys; from changeloop.cli.main import main; sys.exit(main(sys.argv[1:]))"
    for extra in ([], ["--json"]):
        result = subprocess.run(
            [sys.executable, "-c", entry, "prove", "add-review", "--root", str(root), *extra],
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
            assert "\\x1b[2J" in result.stderr

"""The board after a run reaches stderr in one write, masked like every line before it.

stderr is line-buffered even when redirected: a board written line by line cost
a thousand-provider run two thousand writes.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from prove_helpers import git, make_change, make_repo
from stream_helpers import RecordingStream

from changeloop.cli.main import main

PROVIDERS = 40
SECRET = "board-secret-value-1234"


def test_the_board_is_one_masked_write(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = make_repo(tmp_path / "ws", {"a.txt": "a\n", ".gitignore": ".changeloop/\n"})
    providers = "".join(
        f'  p{i}:\n    command: ["true"]\n    capability: noop\n' for i in range(PROVIDERS)
    )
    failing = (
        "  leaky:\n    capability: noop\n    envFrom: [BOARD_SECRET]\n"
        '    command: [sh, -c, "echo $BOARD_SECRET; exit 3"]\n'
    )
    make_change(
        root, "c", "version: 3\nrequires: [noop]\n", f"version: 1\nproviders:\n{providers}{failing}"
    )
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "change")
    monkeypatch.setenv("BOARD_SECRET", SECRET)
    stderr = RecordingStream()
    monkeypatch.setattr(sys, "stderr", stderr)
    code = main(["prove", "c", "--root", str(root), "--jobs", "2", "--no-cache"])
    assert code == 1
    [board] = [w for w in stderr.writes if "providers:\n" in w]
    assert f"  p{PROVIDERS - 1} (command) ran" in board and "  leaky (command) ran" in board
    assert board.rstrip().endswith("# prove again once it is fixed")  # next steps too
    assert SECRET not in stderr.getvalue()

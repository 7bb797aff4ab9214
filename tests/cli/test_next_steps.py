"""Human output ends with a "Next steps:" block of commands to paste (OpenSpec's convention),
for a proven change too, not only after a failure."""

from __future__ import annotations

from pathlib import Path

import pytest
from repo_helpers import basic_example

from changeloop.cli.main import main


def _steps(err: str) -> list[str]:
    block = err.rsplit("Next steps:\n", 1)[1]
    return [line.split("  #")[0].strip() for line in block.splitlines() if line.strip()]


def test_a_proven_change_is_told_what_comes_next(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # its tests leave __pycache__/ behind: ignored, as in any Python repository
    root = basic_example(tmp_path / "ws", {".gitignore": "__pycache__/\n"})
    assert main(["prove", "add-greeting", "--root", str(root)]) == 0
    assert _steps(capsys.readouterr().err) == [
        f"changeloop gate add-greeting --root {root}",
        f"changeloop report add-greeting --root {root}",
    ]
    assert main(["gate", "add-greeting", "--root", str(root)]) == 0
    assert _steps(capsys.readouterr().err) == [  # carry the evidence, then archive
        f"changeloop summary add-greeting --sign-key KEY --into-change --root {root}",
        "openspec archive add-greeting",
    ]


def test_a_gate_with_nothing_proven_says_to_prove(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = basic_example(tmp_path / "ws")
    assert main(["gate", "add-greeting", "--root", str(root)]) == 1
    assert _steps(capsys.readouterr().err) == [f"changeloop prove add-greeting --root {root}"]

"""A stale receipt's reason names what changed since, when this object store can tell.

The case that needed it: a command run with ``--sandbox none`` writes
``__pycache__/`` into a tree that does not ignore it; the receipts name the
content from before, and "prove again" alone does not say why.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
from gate_helpers import gate, prove, workspace

from changeloop.gate.changed import LIMIT, changed_paths


def _reasons(doc: dict[str, Any]) -> str:
    """Every reason message of the gate's document, claims' and change-wide."""
    found = [r["message"] for c in doc["claims"].values() for r in c["reasons"]]
    return "\n".join([*found, *(r["message"] for r in doc.get("reasons", []))])


def test_a_file_the_run_left_is_named_in_the_stale_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = workspace(tmp_path, script="mkdir -p out && echo x > out/left.txt\n")
    assert prove(root, capsys) == 0  # --sandbox none: the command writes into the checkout
    code, doc = gate(root, capsys)
    assert code == 1
    codes = {r["code"] for c in doc["claims"].values() for r in c["reasons"]}
    assert codes == {"stale-content"}
    assert "since then: added out/left.txt — prove again" in _reasons(doc)


def test_an_edit_and_a_removal_are_named_and_the_rest_counted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = workspace(tmp_path)
    for i in range(LIMIT + 2):
        (root / f"extra{i}.txt").write_text("x\n")
    assert prove(root, capsys) == 0
    (root / "check.sh").write_text("exit 0 # edited\n")
    (root / "extra0.txt").unlink()
    code, doc = gate(root, capsys)
    text = _reasons(doc)
    assert code == 1
    assert "changed check.sh" in text and "removed extra0.txt" in text, text
    for i in range(LIMIT + 2):
        (root / f"extra{i}.txt").unlink(missing_ok=True)
    code, doc = gate(root, capsys)
    assert "(+3 more)" in _reasons(doc)  # check.sh + 7 removals: five named, three counted


def test_a_tree_this_store_lacks_or_a_hostile_id_says_nothing_more(tmp_path: Path) -> None:
    repo = tmp_path / "r"
    repo.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    (repo / "a.txt").write_text("a\n")
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True)
    tree = subprocess.run(
        ["git", "write-tree"], cwd=repo, check=True, capture_output=True, text=True
    ).stdout.strip()
    absent = "0123456789abcdef0123456789abcdef01234567"  # made elsewhere: not in this store
    assert changed_paths(repo, absent, tree) is None
    planted = tmp_path / "planted"
    hostile = f"--output={planted}"  # a signed string is still never an option to git
    assert changed_paths(repo, hostile, tree) is None
    assert not planted.exists()
    assert changed_paths(repo, tree, tree) is None  # nothing differs: nothing to add

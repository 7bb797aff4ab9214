"""`receipt sign --sandbox worktree` binds to tracked content only, like a worktree proof."""

from __future__ import annotations

import base64
import json
import subprocess
from pathlib import Path

from prove_helpers import make_change, make_repo

from changeloop.git.identity import content_identity


def _trees(envelope: Path) -> dict[str, str]:
    statement = json.loads(base64.b64decode(json.loads(envelope.read_text())["payload"]))
    return {s["name"]: s["digest"]["gitTree"] for s in statement["subject"]}


def test_worktree_mode_ignores_untracked_files(tmp_path: Path) -> None:
    root = make_repo(tmp_path / "ws", {"a.txt": "a\n"})
    make_change(root, "c1", "version: 3\nclaims:\n  ok: {requires: [review]}\n")
    subprocess.run(
        ["changeloop", "keygen", "--out", str(tmp_path / "k")], check=True, capture_output=True
    )
    (root / "scratch.txt").write_text("not committed\n")
    for mode in ("none", "worktree"):
        subprocess.run(
            [
                "changeloop",
                "receipt",
                "sign",
                "--root",
                str(root),
                "--change",
                "c1",
                "--claims",
                "ok",
                "--key",
                str(tmp_path / "k" / "changeloop.key"),
                "--issuer",
                "ci",
                "--sandbox",
                mode,
                "--out",
                str(tmp_path / f"{mode}.json"),
            ],
            check=True,
            capture_output=True,
        )
    tracked = content_identity(root, include_untracked=False).tree
    everything = content_identity(root, include_untracked=True).tree
    assert tracked != everything
    assert _trees(tmp_path / "worktree.json") == {"self": tracked}
    assert _trees(tmp_path / "none.json") == {"self": everything}

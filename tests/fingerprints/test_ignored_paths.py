"""Which literal paths of ``inputs`` patterns git ignores, against git itself."""

from __future__ import annotations

import subprocess
from pathlib import Path

from repo_helpers import git, make_repo

from changeloop.fingerprints.ignored import IgnoredPaths, literal_path


def test_ignored_paths_agree_with_git_and_a_tracked_file_is_never_ignored(tmp_path: Path) -> None:
    repo = make_repo(
        tmp_path / "r",
        {
            ".gitignore": "build/\n*.log\nkept.txt\n",
            "src/a.py": "a\n",
            "build/flag": "on\n",
            "out.log": "x\n",
            "kept.txt": "tracked though ignored\n",
        },
        commit=False,
    )
    git(repo, "add", "-A")
    git(repo, "add", "-f", "kept.txt")  # tracked, while a pattern ignores it
    git(repo, "commit", "-q", "-m", "init")
    patterns = [
        ("build/flag", "src/**"),
        ("build/*.json",),
        ("out.log", "kept.txt"),
        ("nothing/**", "**/*.py"),
    ]
    found = IgnoredPaths(repo, patterns)
    assert found.ignored == {"build", "build/flag", "out.log"}
    assert found.named(("kept.txt", "src/**")) == []
    # the oracle: git's own check, which looks each path up in the index
    candidates = sorted({p for g in patterns for p in map(literal_path, g) if p is not None})
    oracle = subprocess.run(
        ["git", "check-ignore", "--stdin", "-z"],
        cwd=repo,
        input=b"".join(c.encode() + b"\0" for c in candidates),
        capture_output=True,
        check=False,
    )
    assert {p.decode() for p in oracle.stdout.split(b"\0") if p} == found.ignored
    assert found.named(("build/flag", "out.log")) == ["build/flag", "out.log"]
    assert [literal_path(p) for p in ("build/*.json", "src/**", "**/x", "a/b?/c")] == [
        "build",
        "src",
        None,
        "a",
    ]

"""The content identity follows the bytes a check reads.

The identity's temporary index ignores the user's index flags (assume-unchanged,
skip-worktree hide edits from ``git add``), and it hashes the work-tree bytes as
they are: line-ending normalisation and clean filters must not let bytes the
check reads change under one tree id.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from closure_helpers import answers, prove
from prove_helpers import make_change, make_repo
from repo_helpers import commit_all, git

EVIDENCE = "version: 3\nrequires: [check]\n"
NO_CR = "python3 -c \"import sys; sys.exit(b'\\\\r' in open('data.txt', 'rb').read())\"\n"


def _workspace(tmp_path: Path, files: dict[str, str], command: str = "[sh, check.sh]") -> Path:
    root = make_repo(tmp_path / "ws", {".gitignore": ".changeloop/\n", **files})
    make_change(root, "c", EVIDENCE, f"version: 1\nproviders:\n  check:\n    command: {command}\n")
    commit_all(root, "change")
    return root


@pytest.mark.parametrize("flag", ["--assume-unchanged", "--skip-worktree"])
def test_index_flags_do_not_hide_an_edit(tmp_path: Path, flag: str) -> None:
    root = _workspace(tmp_path, {"check.sh": "exit 0\n"})
    assert prove(root, "c")[0] == 0
    git(root, "update-index", flag, "check.sh")
    (root / "check.sh").write_text("exit 1\n")
    assert git(root, "status", "--porcelain") == ""  # git itself no longer sees it
    found = answers(root, "c")
    assert found.clean == "not-proven"
    assert found.agree(), found.why()


@pytest.mark.parametrize("sandbox", ["none", "copy"])
def test_line_endings_normalised_by_attributes_still_count(tmp_path: Path, sandbox: str) -> None:
    root = _workspace(
        tmp_path, {".gitattributes": "* text=auto\n", "data.txt": "a\nb\n", "check.sh": NO_CR}
    )
    assert prove(root, "c", "--sandbox", sandbox)[0] == 0
    (root / "data.txt").write_bytes(b"a\r\nb\r\n")  # normalised, the blob is the same
    found = answers(root, "c", "--sandbox", sandbox)
    assert found.clean == "not-proven"
    assert found.agree(), found.why()


def test_line_endings_normalised_by_a_nested_attributes_file_still_count(tmp_path: Path) -> None:
    # only a directory's own .gitattributes asks for normalisation: the identity must find it
    # in the index listing, not only at the top of the work tree
    check = NO_CR.replace("data.txt", "sub/data.txt")
    root = _workspace(
        tmp_path,
        {"sub/.gitattributes": "* text=auto\n", "sub/data.txt": "a\nb\n", "check.sh": check},
    )
    assert prove(root, "c")[0] == 0
    (root / "sub" / "data.txt").write_bytes(b"a\r\nb\r\n")  # normalised, the blob is the same
    found = answers(root, "c")
    assert found.clean == "not-proven"
    assert found.agree(), found.why()


def test_line_endings_normalised_by_autocrlf_still_count(tmp_path: Path) -> None:
    root = _workspace(tmp_path, {"data.txt": "a\nb\n", "check.sh": NO_CR})
    git(root, "config", "core.autocrlf", "input")
    assert prove(root, "c")[0] == 0
    (root / "data.txt").write_bytes(b"a\r\nb\r\n")
    found = answers(root, "c")
    assert found.clean == "not-proven"
    assert found.agree(), found.why()


def test_a_clean_filter_does_not_hide_bytes(tmp_path: Path) -> None:
    root = _workspace(
        tmp_path,
        {
            ".gitattributes": "data.txt filter=strip\n",
            "data.txt": "ok\n",
            "check.sh": 'grep -q "^ok$" data.txt && ! grep -q DEBUG data.txt\n',
        },
    )
    git(root, "config", "filter.strip.clean", "grep -v DEBUG")
    git(root, "config", "filter.strip.smudge", "cat")
    assert prove(root, "c")[0] == 0
    (root / "data.txt").write_text("ok\nDEBUG\n")
    found = answers(root, "c")
    assert found.clean == "not-proven"
    assert found.agree(), found.why()


@pytest.mark.parametrize("flag", ["--assume-unchanged", "--skip-worktree"])
def test_a_flagged_edit_that_keeps_size_and_time_still_counts(tmp_path: Path, flag: str) -> None:
    """The flagged entry's stat data dates from before the flag: an edit of the same size
    whose mtime is put back (``cp -p``, ``touch -r``; ctime not trusted) must not match it."""
    root = _workspace(tmp_path, {"check.sh": "exit 0\n"})
    git(root, "config", "core.trustctime", "false")
    assert prove(root, "c")[0] == 0
    git(root, "update-index", flag, "check.sh")
    script = root / "check.sh"
    before = script.stat()
    script.write_text("exit 1\n")
    os.utime(script, ns=(before.st_atime_ns, before.st_mtime_ns))
    found = answers(root, "c")
    assert found.clean == "not-proven"
    assert found.agree(), found.why()

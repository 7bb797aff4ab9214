"""The repository speaks for itself: no citation of a design document it does not hold, and
no issue numbers (a newcomer cannot follow either)."""

from __future__ import annotations

import re
import subprocess

from repo_paths import REPO_ROOT

WORDS = re.compile(r"DESIGN\.md|DESIGN §|(?<!RFC 8785 )§\s?\d|\b[Ii]ssues? #?\d+\b")
TEXT = (".py", ".md", ".sh", ".toml", ".yaml", ".yml", ".json", ".ts", ".js", ".mjs", ".cfg")


def test_no_tracked_file_cites_an_absent_design_document_or_an_issue_number() -> None:
    listed = subprocess.run(
        ["git", "ls-files", "-z"], cwd=REPO_ROOT, capture_output=True, check=True
    ).stdout.split(b"\0")
    found = []
    for raw in listed:
        name = raw.decode()
        if (
            not name.endswith(TEXT)
            or name.startswith("tests/fixtures/")
            or "/node_modules/" in name
        ):
            continue
        if name == "tests/test_repository_words.py":
            continue
        path = REPO_ROOT / name
        if not path.is_file():
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        found += [
            f"{name}:{n}: {line.strip()[:100]}"
            for n, line in enumerate(text.splitlines(), 1)
            if WORDS.search(line)
        ]
    assert found == [], "\n".join(found[:40])

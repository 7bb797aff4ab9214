"""docs/threat-model.md points only at tests that exist.

Every ``tests/<file>.py::<name>`` it cites must be a test function in that file,
and every plain ``tests/<file>.py`` must exist, so a renamed test cannot leave
a row pointing at nothing. Patterns (``tests/test_trust_wiring*.py``) name
families of tests; each must match at least one file.
"""

from __future__ import annotations

import re

from repo_paths import REPO_ROOT

ROOT = REPO_ROOT
DOC = ROOT / "docs" / "threat-model.md"
# `tests/x.py::a`, `::b` — b is in x.py too
CITE = re.compile(r"`(tests/[\w*/]+\.py)(?:::(\w+))?`|`::(\w+)`")


def references() -> list[tuple[str, str]]:
    refs: list[tuple[str, str]] = []
    for line in DOC.read_text(encoding="utf-8").splitlines():
        for cell in line.split("|"):
            current = None
            for match in CITE.finditer(cell):
                if match[1]:
                    current = match[1]
                    refs.append((current, match[2] or ""))
                elif current is not None:
                    refs.append((current, match[3]))
    return refs


def test_every_cited_test_exists() -> None:
    refs = [(f, n) for f, n in references() if "*" not in f]
    assert len(refs) >= 15, refs
    for path, name in refs:
        source = ROOT / path
        assert source.is_file(), f"threat-model.md cites missing {path}"
        if name:
            assert re.search(rf"^(async )?def {name}\(", source.read_text(), re.M), (
                f"threat-model.md cites {path}::{name}, which does not exist"
            )


def test_every_cited_family_of_tests_has_members() -> None:
    patterns = sorted({f for f, _ in references() if "*" in f})
    assert patterns, "the table cites the wiring, masking, symlink and state tests"
    missing = [p for p in patterns if not list(ROOT.glob(p))]
    assert not missing, f"threat-model.md cites {missing}, which match no test file"

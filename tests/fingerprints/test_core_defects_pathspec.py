"""`inputs` match exactly what git's `ls-files -- ':(glob)<pattern>'` lists."""

from __future__ import annotations

import os
import random
import subprocess
from pathlib import Path

import pytest
from prove_helpers import make_repo

from changeloop.fingerprints.fingerprint import InputsIndex

FILES = [
    "src/a.py",
    "src/ab.txt",
    "src/b/c.py",
    "src/b/d/e.py",
    "src.txt",
    "srcx/q.py",
    "docs/z.py",
    "x.txt",
    "we[ird/f",
    "a]b",
    "star*",
    "q?",
    "sp ace/é.py",
    "src/b-c/-",
    "Upper/Case.PY",
]

HAND = [
    "src",
    "src/",
    "./src",
    "src/.",
    "src//b",
    "src/./b",
    "src/b/",
    ".",
    "./",
    "*",
    "**",
    "*.py",
    "**/*.py",
    "src/**",
    "src/**/",
    "**/",
    "src/*",
    "src/b*",
    "sr*",
    "src**",
    "s**/a.py",
    "a**b",
    "**.py",
    "**/d",
    "**/d/**",
    "src/**/e.py",
    "*/*",
    "*/*/*",
    "we[ird",
    "we[ird/",
    "[a]]b",
    "[]a]]b",
    "[a-c]]b",
    "star\\*",
    "q\\?",
    "[!s]*",
    "[^s]*",
    "[[:alpha:]]*.txt",
    "[[:upper:]]*/*",
    "[[:alpha]*",
    "[[:foo:]]*",
    "[a-]*",
    "[-a]*",
    "x.txt\\",
    "x.txt/",
    "x.txt/.",
    "*[",
    "src/b/d/e.p[",
    "sp ace/?.py",
    "sp ace/??.py",
    "sp ace/*",
    "src/b?c/*",
    "src/b[-]c/-",
    "SRC",
    "nothing/**",
]


def _git_lists(repo: Path, pattern: str) -> list[str] | None:
    proc = subprocess.run(
        ["git", "ls-files", "-z", "--", f":(glob){pattern}"],
        cwd=repo,
        capture_output=True,
        check=False,
    )
    if proc.returncode != 0:
        return None  # git refuses it (e.g. outside the repository); preflight does too
    return sorted(os.fsdecode(p) for p in proc.stdout.split(b"\0") if p)


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_repo(tmp_path_factory.mktemp("pathspec") / "r", {f: f + "\n" for f in FILES})


@pytest.mark.parametrize("pattern", HAND)
def test_hand_picked_patterns_agree_with_git(repo: Path, pattern: str) -> None:
    expected = _git_lists(repo, pattern)
    assert expected is not None
    assert InputsIndex(repo).matches([pattern]) == expected


def test_src_covers_everything_under_it(repo: Path) -> None:
    assert InputsIndex(repo).matches(["src"]) == [
        "src/a.py",
        "src/ab.txt",
        "src/b-c/-",
        "src/b/c.py",
        "src/b/d/e.py",
    ]


def _mutated(rng: random.Random) -> str:
    """A pattern grown from a real path: some characters become wildcards, some dirs `**`."""
    path = rng.choice(FILES)
    if rng.random() < 0.3 and "/" in path:
        path = path[: path.rfind("/") + rng.choice([0, 1])]  # its directory, with or without "/"
    out: list[str] = []
    for ch in path:
        roll = rng.random()
        if ch == "/" and roll < 0.15:
            out.append("/**/")
        elif roll < 0.08:
            out.append("?")
        elif roll < 0.14:
            out.append("*")
        elif roll < 0.18:
            out.append(f"[{ch}x]")
        elif roll < 0.20:
            out.append(f"[!{ch}]")
        elif ch in "*?[]\\" and roll < 0.6:
            out.append("\\" + ch)
        else:
            out.append(ch)
    return "".join(out)


def test_random_patterns_agree_with_git(repo: Path) -> None:
    tokens = ["src", "b", "d", "a", "py", "txt", ".", "/", "*", "**", "?", "[ab]", "[!a]"]
    tokens += ["[a-c]", "\\*", "[", "]", "-", "e", "we", "ird", " ", "é", "[[:lower:]]"]
    rng = random.Random(12)
    index = InputsIndex(repo)
    checked = matched = 0
    for n in range(600):
        if n % 2:
            pattern = _mutated(rng)
        else:
            pattern = "".join(rng.choice(tokens) for _ in range(rng.randint(1, 6)))
        if pattern.startswith("/"):
            continue  # absolute: refused by preflight
        expected = _git_lists(repo, pattern)
        if expected is None:
            continue
        assert index.matches([pattern]) == expected, pattern
        checked += 1
        matched += bool(expected)
    assert checked > 500 and matched > 150, (checked, matched)

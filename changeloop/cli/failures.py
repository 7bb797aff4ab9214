"""A failed run, explained where the user is: the line that says why, and how to rerun.

Example::

    last_meaningful_line(log)          # "/usr/bin/python3: No module named pytest"
    rerun_command(plan, provider, ["tests.test_fees::test_fee_minimum"])
    # "python -m pytest tests/test_fees.py::test_fee_minimum"

Both read only what the run left (its log, the plan); nothing runs here. A
rerun command is given only where the runner is known and each test can be
named to it; otherwise the caller says nothing rather than something wrong.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from changeloop.text import escape_controls

if TYPE_CHECKING:  # the board imports this module; a re-prove from its record stays light
    from changeloop.model import Plan, Provider

TAIL_BYTES = 64 * 1024
MAX_LINE = 300
# What a line that says why a command failed looks like, across runners and shells.
_MEANINGFUL = re.compile(
    r"(No module named|not found|[Ee]rror\b|ERR!|[Cc]annot |[Cc]ould not|[Pp]ermission denied|"
    r"[Nn]o such file|[Uu]nknown option|[Uu]nrecognized|refused|[Ff]atal|panicked)"
)
_NOISE = re.compile(
    r"^([=\-_*~#. ]+|.*\bgenerated xml file\b.*|\s*at .*\(.*:\d+:\d+\)|\s*File \".*)$"
)


def last_meaningful_line(log: Path) -> str | None:
    """The last line of ``log`` that says why, else its last non-blank line (bounded)."""
    try:
        with log.open("rb") as fh:
            size = fh.seek(0, 2)
            fh.seek(max(0, size - TAIL_BYTES))
            text = fh.read().decode("utf-8", errors="replace")
    except OSError:
        return None
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    lines = [ln for ln in lines if not _NOISE.match(ln)]
    if not lines:
        return None
    chosen = next((ln for ln in reversed(lines) if _MEANINGFUL.search(ln)), lines[-1])
    chosen = escape_controls(_strip_ansi(chosen))
    return chosen if len(chosen) <= MAX_LINE else chosen[: MAX_LINE - 1] + "…"


def _strip_ansi(text: str) -> str:
    return re.sub(r"\x1b\[[0-?]*[ -/]*[@-~]", "", text)


# -- rerunning just the failing tests ---------------------------------------------------


def rerun_command(plan: Plan, provider: Provider, tests: Sequence[str]) -> tuple[Path, str] | None:
    """(where to run it, the command) that reruns just ``tests`` as ``provider`` ran them."""
    argv = list(provider.command or ())
    if not argv or not tests:
        return None
    repo = plan.repositories.get(provider.repository or "")
    if repo is None and len(plan.repositories) == 1:
        repo = next(iter(plan.repositories.values()))
    if repo is None:
        return None
    words = [w.rsplit("/", 1)[-1] for w in argv]
    command = None
    if "pytest" in words or "py.test" in words:
        command = _pytest(argv, words, repo.path, tests)
    elif "unittest" in words:
        command = _unittest(argv, words, repo.path, tests)
    elif "vitest" in words or "jest" in words:
        command = _js(
            ("npx", "vitest" if "vitest" in words else "jest"), tests, run="vitest" in words
        )
    elif "playwright" in words:
        command = _playwright(tests)
    elif words[0] == "cargo" and "test" in words:
        command = shlex.join(["cargo", "test", *(t.rsplit("::", 1)[-1] for t in tests[:1])])
    elif words[0] == "node" and "--test" in argv:
        command = _node(tests)
    return (repo.path, command) if command is not None else None


def _python(argv: list[str], words: list[str], module: str, repo: Path) -> list[str]:
    """The interpreter the provider runs: as written, except the machine-independent
    ``python`` of derived wiring, which runs the repository's virtualenv when it has one."""
    from changeloop.fingerprints.environment import venv_python

    head = argv[: argv.index("-m")] if module in words and "-m" in argv else ["python"]
    if head == ["python"]:
        venv = venv_python(repo)
        if venv is not None:
            head = [venv.relative_to(repo.absolute()).as_posix()]
    return [*head, "-m", module]


def _pytest(argv: list[str], words: list[str], repo: Path, tests: Sequence[str]) -> str:
    ids = [_pytest_node(repo, t) for t in tests]
    return shlex.join([*_python(argv, words, "pytest", repo), *ids])


def _pytest_node(repo: Path, test: str) -> str:
    """A JUnit id (``tests.test_x.TestA::test_b``) as pytest's node id
    (``tests/test_x.py::TestA::test_b``); a node id as it is."""
    if "::" not in test:
        return test
    where, name = test.split("::", 1)
    if where.endswith(".py") or "/" in where:
        return test
    parts = where.split(".")
    for cut in range(len(parts), 0, -1):
        candidate = "/".join(parts[:cut]) + ".py"
        if (repo / candidate).is_file():
            return "::".join([candidate, *parts[cut:], name])
    return test


def _unittest(argv: list[str], words: list[str], repo: Path, tests: Sequence[str]) -> str:
    dotted = [t.replace("::", ".") for t in tests]
    return shlex.join([*_python(argv, words, "unittest", repo), *dotted])


def _split(test: str) -> tuple[str | None, str]:
    where, _, name = test.rpartition("::")
    return (where or None), name


def _js(tool: tuple[str, ...], tests: Sequence[str], *, run: bool) -> str | None:
    files = sorted({f for f, _ in map(_split, tests) if f})
    names = [n for _, n in map(_split, tests)]
    pattern = "|".join(re.escape(n) for n in names)
    return shlex.join([*tool, *(["run"] if run else []), *files, "-t", pattern])


def _playwright(tests: Sequence[str]) -> str:
    files = sorted({f.split(" ")[0] for f, _ in map(_split, tests) if f})
    pattern = "|".join(re.escape(n) for _, n in map(_split, tests))
    return shlex.join(["npx", "playwright", "test", *files, "-g", pattern])


def _node(tests: Sequence[str]) -> str:
    files = sorted({f for f, _ in map(_split, tests) if f})
    pattern = "|".join(re.escape(n) for _, n in map(_split, tests))
    return shlex.join(["node", "--test", f"--test-name-pattern={pattern}", *files])

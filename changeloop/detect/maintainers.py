"""The test commands a Python project's own configuration runs: tox, nox, Makefile, CI.

Example::

    >>> [(c.runner, c.evidence) for c in test_commands(Path("."))]
    [('unittest', 'tox.ini [testenv] commands')]

How the maintainers run their tests decides the runner (docs/bootstrap.md): a
project whose tox.ini runs ``python -m unittest`` is a unittest
project even when pytest configuration is also present — pytest would not run
its ``load_tests`` doctests, and the suite would shrink silently. Everything
here is read as data and never executed: tox.ini/setup.cfg with configparser,
``noxfile.py`` with ``ast`` (string literals of ``session.run(...)`` calls
only), Makefile recipes and GitHub workflow ``run:`` steps as text/YAML.
"""

from __future__ import annotations

import ast
import configparser
import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from changeloop.project.manifests import MAX_BYTES, dig, read_ini, read_toml

MAKEFILES = ("Makefile", "makefile", "GNUmakefile")
_MAKE_TARGET = re.compile(r"^(?P<targets>[A-Za-z0-9_.\-/ ]+?)\s*::?(?!=)(?P<deps>.*)$")
_TESTISH = re.compile(r"test|check", re.IGNORECASE)
# Flags unittest's own -v replaces; derived wiring always adds -v (the reader needs it).
_VERBOSITY = {"-v", "--verbose", "-q", "--quiet"}


@dataclass(frozen=True)
class TestCommand:
    """One command the project's configuration runs its tests with."""

    __test__ = False  # not a pytest test class despite the name

    runner: str  # "unittest" | "pytest"
    evidence: str  # file and key, e.g. "tox.ini [testenv] commands"
    line: str  # the command as written
    args: tuple[str, ...]  # what follows `-m unittest` (unittest only), kept for derived wiring


def test_commands(repo: Path) -> list[TestCommand]:
    """Test commands from tox, nox, Makefile and CI, in that order."""
    found: list[TestCommand] = []
    for evidence, line in _tox(repo) + _nox(repo) + _make(repo) + _workflows(repo):
        command = classify(line, evidence)
        if command is not None:
            found.append(command)
    return found


def classify(line: str, evidence: str) -> TestCommand | None:
    """The runner one command line runs, or None when it runs neither."""
    for segment in re.split(r"&&|\|\||;|\|", line):
        try:
            words = shlex.split(segment, comments=True)
        except ValueError:
            words = segment.split()
        names = [w.rsplit("/", 1)[-1] for w in words]
        for i, name in enumerate(names):
            if name == "-m" and i + 1 < len(names) and names[i + 1] == "unittest":
                args = _unittest_args(words[i + 2 :])
                return TestCommand("unittest", evidence, line.strip(), args)
            if name == "-munittest":
                args = _unittest_args(words[i + 1 :])
                return TestCommand("unittest", evidence, line.strip(), args)
            if name in ("pytest", "py.test") or (
                name == "-m" and i + 1 < len(names) and names[i + 1] == "pytest"
            ):
                return TestCommand("pytest", evidence, line.strip(), ())
    return None


def _unittest_args(words: list[str]) -> tuple[str, ...]:
    """unittest's own arguments, without verbosity flags or tox/shell placeholders."""
    return tuple(w for w in words if w not in _VERBOSITY and "{" not in w and "$" not in w)


def _text(path: Path) -> str | None:
    try:
        if not path.is_file() or path.stat().st_size > MAX_BYTES:
            return None
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def _tox(repo: Path) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for name, prefix in (("tox.ini", ""), ("setup.cfg", "testenv")):
        ini = read_ini(repo / name)
        if ini is None:
            continue
        for section in ini.sections():
            if not (section == "testenv" or section.startswith("testenv:")):
                continue
            if prefix and not section.startswith(prefix):
                continue
            if ini.has_option(section, "commands"):
                for line in _lines(ini.get(section, "commands")):
                    out.append((f"{name} [{section}] commands", line))
    legacy = dig(read_toml(repo / "pyproject.toml"), "tool", "tox", "legacy_tox_ini")
    if isinstance(legacy, str):
        parser = configparser.ConfigParser(interpolation=None, strict=False)
        try:
            parser.read_string(legacy)
        except configparser.Error:
            return out
        for section in parser.sections():
            if section.startswith("testenv") and parser.has_option(section, "commands"):
                for line in _lines(parser.get(section, "commands")):
                    out.append((f"pyproject.toml [tool.tox] legacy_tox_ini [{section}]", line))
    return out


def _lines(value: str) -> list[str]:
    """tox command lines: one per line, backslash continuations joined, `- ` prefix dropped."""
    joined = re.sub(r"\\\n\s*", " ", value)
    out = []
    for raw in joined.splitlines():
        line = raw.strip()
        if line.startswith("- "):
            line = line[2:]
        if line and not line.startswith("#"):
            out.append(line)
    return out


def _nox(repo: Path) -> list[tuple[str, str]]:
    text = _text(repo / "noxfile.py")
    if text is None:
        return []
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return []
    out: list[tuple[str, str]] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.FunctionDef):
            continue
        for call in ast.walk(node):
            if (
                isinstance(call, ast.Call)
                and isinstance(call.func, ast.Attribute)
                and call.func.attr == "run"
            ):
                words = [
                    a.value
                    for a in call.args
                    if isinstance(a, ast.Constant) and isinstance(a.value, str)
                ]
                if words:
                    out.append((f"noxfile.py session {node.name}", shlex.join(words)))
    return out


def _make(repo: Path) -> list[tuple[str, str]]:
    for name in MAKEFILES:
        text = _text(repo / name)
        if text is not None:
            return _make_recipes(name, text)
    return []


def _make_recipes(name: str, text: str) -> list[tuple[str, str]]:
    """Recipe lines of targets whose name mentions test/check."""
    out: list[tuple[str, str]] = []
    current: list[str] = []
    for raw in re.sub(r"\\\n", " ", text).splitlines():
        if raw.startswith("\t"):
            line = raw.strip().lstrip("@-+").strip()
            for target in current:
                if line:
                    out.append((f"{name} target {target}", line))
            continue
        match = _MAKE_TARGET.match(raw)
        if match and not raw.startswith((" ", "#", ".")):
            current = [t for t in match.group("targets").split() if _TESTISH.search(t)]
        elif raw.strip() and not raw.startswith("#"):
            current = []
    return out


def _workflows(repo: Path) -> list[tuple[str, str]]:
    return [(evidence, line) for evidence, lines in workflow_jobs(repo) for line in lines]


def workflow_jobs(repo: Path) -> list[tuple[str, list[str]]]:
    """(``.github/workflows/<file> jobs.<job> run``, the job's ``run:`` lines in order)."""
    folder = repo / ".github" / "workflows"
    try:
        files = sorted([*folder.glob("*.yml"), *folder.glob("*.yaml")])
    except OSError:
        return []
    out: list[tuple[str, list[str]]] = []
    for path in files:
        text = _text(path)
        if text is None:
            continue
        try:
            doc: Any = yaml.safe_load(text)
        except yaml.YAMLError:
            continue
        jobs = doc.get("jobs") if isinstance(doc, dict) else None
        if not isinstance(jobs, dict):
            continue
        for job_name, job in jobs.items():
            steps = job.get("steps") if isinstance(job, dict) else None
            lines: list[str] = []
            for step in steps if isinstance(steps, list) else []:
                run = step.get("run") if isinstance(step, dict) else None
                if isinstance(run, str):
                    lines.extend(_lines(run))
            if lines:
                out.append((f".github/workflows/{path.name} jobs.{job_name} run", lines))
    return out

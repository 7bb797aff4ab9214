"""Can the interpreter a Python test command runs import the runner and the project?

``evidence doctor`` asks before ``prove`` trips over it (docs/bootstrap.md): a derived
``python -m pytest`` run by a bare system interpreter discovers 0 tests when
pytest, the project or its test dependencies are not installed there. The
command's own interpreter is asked with ``importlib.util.find_spec`` (locates
a module without importing it) and ``importlib.metadata.version`` (reads
installed metadata) — no project code runs. The fix is pasteable: a virtualenv
in the repository (derived ``python`` resolves to it when the provider runs)
with the project editable and the test extra or dependency group that names
the runner.

Example::

    >>> check(Path("humanize"), ("python", "-m", "pytest"))
    EnvGap(runner_missing=True, missing=('humanize', 'freezegun', ...),
           fix="python3 -m venv .venv && .venv/bin/python -m pip install -e '.[tests]'")
"""

from __future__ import annotations

import posixpath
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path
from typing import Any

from changeloop.detect import build_tools
from changeloop.detect.imports import (
    interpreter_of,
    probe,
    pytest_pythonpath,
    search_path,
    trusted_interpreter,
)
from changeloop.detect.python import venv_version
from changeloop.fingerprints.environment import DERIVED_PYTHON, venv_python
from changeloop.project.manifests import dig, read_toml, requirement
from changeloop.project.packages import project_packages
from changeloop.providers.pytest_injection import pytest_position

TIMEOUT_S = 30
_SCRIPT = """
import importlib.util, importlib.metadata as md, json, sys
sys.path[:0] = json.loads(sys.argv[1])
mods, dists = json.loads(sys.argv[2]), json.loads(sys.argv[3])
def found(name):
    try:
        return importlib.util.find_spec(name) is not None
    except Exception:
        return False
def installed(name):
    try:
        md.version(name)
        return True
    except Exception:
        return False
print(json.dumps({"modules": [m for m in mods if not found(m)],
                  "dists": [d for d in dists if not installed(d)]}))
"""


@dataclass(frozen=True)
class EnvGap:
    """What the command's interpreter lacks, and the command that supplies it."""

    interpreter: str  # as the command resolves it
    runner: str | None  # "pytest" when missing, else None
    missing: tuple[str, ...]  # project packages and test distributions not found
    fix: str
    # the install doctor printed was run and failed: why, as pip's log says
    failure: build_tools.InstallFailure | None = None


def runner_of(argv: Sequence[str]) -> str | None:
    """The Python test runner ``argv`` runs: pytest, unittest, or None."""
    if pytest_position(argv) is not None:
        return "pytest"
    words = [a.rsplit("/", 1)[-1] for a in argv]
    if any(w == "-m" and n == "unittest" for w, n in pairwise(words)):
        return "unittest"
    return None


def test_requirements(repo: Path) -> tuple[str | None, list[str]]:
    """(extra name, requirement strings) of the extra or group that names pytest.

    The extra is returned by name (``pip install -e '.[tests]'``); a dependency
    group is expanded (``include-group`` followed), since older pip cannot
    install a group by name.
    """
    data = read_toml(repo / "pyproject.toml")
    extras = dig(data, "project", "optional-dependencies")
    if isinstance(extras, dict):
        for name, specs in extras.items():
            if isinstance(specs, list) and _names_pytest(specs):
                return str(name), [s for s in specs if isinstance(s, str)]
    groups = data.get("dependency-groups") if isinstance(data, dict) else None
    if isinstance(groups, dict):
        order = sorted(groups, key=lambda g: (g not in ("test", "tests", "testing"), g))
        for name in order:
            specs = _expand(groups, name, set())
            if _names_pytest(specs):
                return None, specs
    return None, []


def _names_pytest(specs: list[Any]) -> bool:
    return any(
        isinstance(s, str) and (r := requirement(s)) is not None and r[0] == "pytest" for s in specs
    )


def _expand(groups: dict[str, Any], name: str, seen: set[str]) -> list[str]:
    if name in seen:
        return []
    seen.add(name)
    out: list[str] = []
    items = groups.get(name)
    for item in items if isinstance(items, list) else []:
        if isinstance(item, str):
            out.append(item)
        elif isinstance(item, dict) and isinstance(item.get("include-group"), str):
            out.extend(_expand(groups, item["include-group"], seen))
    return out


def install_command(repo: Path, interpreter: str | None = None) -> str:
    """The pasteable command that gives ``repo`` a virtualenv able to run its tests.

    Never an interpreter outside the repository (the machine's own Python, which
    other programs use): ``interpreter`` is used only when it lives in the
    repository; otherwise the repository's own virtualenv, made when missing
    (``python3 -m venv .venv``). pip logs the install into the virtualenv
    (``--log``), so doctor can tell why it failed. Programs the build runs that
    are not on PATH (pnpm for a build hook, cargo) are installed first.
    """
    venv = own_interpreter(repo, interpreter) or venv_python(repo)
    if venv is not None:
        where = venv.relative_to(repo.absolute()).as_posix()
        python = shlex.quote(where)
        log = shlex.quote(f"{posixpath.dirname(posixpath.dirname(where))}/{build_tools.LOG_NAME}")
        prefix = f"{python} -m ensurepip -q && " if _lacks_pip(repo, venv) else ""
    else:
        python, prefix = ".venv/bin/python", "python3 -m venv .venv && "
        log = f".venv/{build_tools.LOG_NAME}"
    extra, specs = test_requirements(repo)
    buildable = (repo / "pyproject.toml").is_file() or (repo / "setup.py").is_file()
    if buildable and extra is not None:
        what = shlex.quote(f".[{extra}]")
        args = f"-e {what}"
    elif buildable:
        args = " ".join(["-e", ".", *(shlex.quote(s) for s in specs or ["pytest"])])
    else:
        reqs = sorted(p.name for p in repo.glob("requirements*.txt"))
        args = " ".join(["pytest", *(f"-r {shlex.quote(r)}" for r in reqs)])
    tools = [
        install
        for tool, _why in build_tools.missing_programs(repo)
        if (install := build_tools.install_for(repo, tool)) is not None
    ]
    first = "".join(f"{t} && " for t in dict.fromkeys(tools))
    return f"{first}{prefix}{python} -m pip install --log {log} {args}"


def own_interpreter(repo: Path, interpreter: str | None) -> Path | None:
    """``interpreter`` (as a command names it) when it lives in the repository, else None."""
    if not interpreter or "/" not in interpreter:
        return None
    path = Path(interpreter) if Path(interpreter).is_absolute() else repo / interpreter
    try:
        path.absolute().relative_to(repo.absolute())
    except ValueError:
        return None
    return path.absolute() if path.exists() else None


def _lacks_pip(repo: Path, venv: Path) -> bool:
    """A virtualenv made without pip (``uv venv``)."""
    if venv == venv_python(repo):
        return venv_version(repo, "pip") is None
    return not any(venv.parent.parent.glob("lib/python*/site-packages/pip"))


def check(repo: Path, argv: Sequence[str]) -> EnvGap | None:
    """What the interpreter ``argv`` runs lacks to run the project's tests; None if nothing."""
    runner = runner_of(argv)
    if runner is None:
        return None
    derived = bool(argv) and argv[0] == DERIVED_PYTHON
    found = interpreter_of(repo, argv)
    if found is None:
        if not derived:
            return None  # an explicit interpreter not on PATH: the tool check says so
        return EnvGap("python", runner, (), install_command(repo, None))
    _written, python = found
    if not trusted_interpreter(repo, python):
        return None
    modules = sorted(project_packages(repo))
    if runner == "pytest":
        modules = ["pytest", *modules]
    _extra, specs = test_requirements(repo)
    dists = sorted({r[0] for s in specs if (r := requirement(s)) is not None})
    extra = pytest_pythonpath(repo) if runner == "pytest" else []
    # isolated, from outside the repository: nothing of the repository runs (imports.probe)
    doc = probe(python, _SCRIPT, [search_path(repo, extra), modules, dists])
    if not isinstance(doc, dict):
        return None
    missing_mods = [m for m in doc.get("modules", []) if isinstance(m, str)]
    missing_dists = [d for d in doc.get("dists", []) if isinstance(d, str)]
    runner_missing = "pytest" in missing_mods
    missing = tuple(m for m in missing_mods if m != "pytest") + tuple(
        d for d in missing_dists if d != "pytest"
    )
    if not runner_missing and not missing:
        return None
    interpreter = None if derived else argv[0]
    venv = own_interpreter(repo, interpreter) or venv_python(repo)
    return EnvGap(
        str(python),
        "pytest" if runner_missing else None,
        missing,
        install_command(repo, interpreter),
        build_tools.last_failure(build_tools.log_of(venv)),
    )

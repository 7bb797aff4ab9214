"""Where a test command's interpreter would import the project's own packages from.

Example::

    >>> outside_packages(Path("."), ("python3", "-m", "pytest"))
    [Shadowed(name='mylib', origin='/usr/lib/python3/site-packages/mylib/__init__.py',
              own='src/mylib', interpreter='python3')]

``evidence doctor`` catches before anything runs what the pytest plugin would
find afterwards (docs/bootstrap.md): an installed copy in the interpreter's
site-packages shadowing the repository's code. It runs the command's own
interpreter with a tiny script of ``importlib.util.find_spec`` calls for the
project's top-level names — ``find_spec`` of a top-level package locates it
without importing it, so no project code runs. pytest's ``pythonpath`` setting
is honoured (pytest puts those folders first).

Bootstrap runs nothing of the repository: every probe (:func:`probe`) runs the
interpreter isolated (``-I``: no current folder, no ``PYTHON*`` variables, no
user site on ``sys.path``) from a folder outside the repository, so a top-level
``json.py`` or ``sitecustomize.py`` in a cloned repository is never imported. The
folders the real run would put first (the repository, as ``python -m`` does;
pytest's ``pythonpath``; ``PYTHONPATH``) are handed to the script as data and
searched with ``find_spec`` only after the script's own imports are done.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path

from changeloop.fingerprints.environment import resolve_argv
from changeloop.project.manifests import read_ini, read_toml
from changeloop.project.packages import project_packages
from changeloop.providers.pytest_injection import inside, pytest_position

_PYTHON = re.compile(r"^python(\d+(\.\d+)?)?$")
TIMEOUT_S = 30
_SCRIPT = """
import importlib.util, json, sys
sys.path[:0] = json.loads(sys.argv[1])
out = {}
for name in json.loads(sys.argv[2]):
    try:
        spec = importlib.util.find_spec(name)
    except Exception:
        spec = None
    if spec is None:
        out[name] = None
    elif spec.origin and spec.origin not in ("namespace", "built-in", "frozen"):
        out[name] = [spec.origin]
    else:
        out[name] = list(spec.submodule_search_locations or [])
print(json.dumps(out))
"""


@dataclass(frozen=True)
class Shadowed:
    name: str
    origin: str  # where the interpreter finds it, outside the repository
    own: str  # the repository's own copy, relative to the repository
    interpreter: str  # as the command names it


def interpreter_of(repo: Path, argv: Sequence[str]) -> tuple[str, Path] | None:
    """(as written, resolved path) of the Python interpreter ``argv`` runs, if any."""
    if not argv:
        return None
    first = argv[0]
    word = first.rsplit("/", 1)[-1]
    path = _resolve(repo, resolve_argv(argv[:1], repo)[0])
    if path is None:
        return None
    if _PYTHON.match(word):
        return first, path
    if word in ("pytest", "py.test"):
        try:
            with path.open("rb") as fh:
                line = fh.readline(512).decode("utf-8", errors="replace")
        except OSError:
            return None
        shebang = line[2:].strip().split() if line.startswith("#!") else []
        if shebang and _PYTHON.match(shebang[0].rsplit("/", 1)[-1]):
            return first, Path(shebang[0])
    return None


def trusted_interpreter(repo: Path, python: Path) -> bool:
    """An interpreter, not project code: a binary, or a file outside the repository.

    A virtualenv's ``bin/python`` is a symlink to the base interpreter or a copy
    of its binary; a *script* named python inside the repository is the
    project's own code, and bootstrap never runs that.
    """
    try:
        real = python.resolve()
        with real.open("rb") as fh:
            magic = fh.read(4)
    except OSError:
        return False
    if magic == b"\x7fELF" or magic[:2] == b"MZ" or magic in (b"\xcf\xfa\xed\xfe",):
        return True
    try:
        real.relative_to(repo.resolve())
    except ValueError:
        return True
    return False


def _resolve(repo: Path, command: str) -> Path | None:
    if "/" in command:
        path = Path(command) if Path(command).is_absolute() else repo / command
        return path if path.exists() else None
    found = shutil.which(command)
    return Path(found) if found else None


def pytest_pythonpath(repo: Path) -> list[str]:
    """Folders pytest's ``pythonpath`` setting puts first on sys.path (absolute)."""
    from changeloop.detect.python import pytest_settings  # noqa: PLC0415 - detect.python pulls in yaml; only pytest's pythonpath needs it

    value = pytest_settings(read_toml(repo / "pyproject.toml")).get("pythonpath")
    if value is None:
        for name, section in (
            ("pytest.ini", "pytest"),
            ("tox.ini", "pytest"),
            ("setup.cfg", "tool:pytest"),
        ):
            ini = read_ini(repo / name)
            if ini is not None and ini.has_option(section, "pythonpath"):
                value = ini.get(section, "pythonpath").split()
                break
    if isinstance(value, str):
        value = value.split()
    if not isinstance(value, list):
        return []
    return [str((repo / str(v)).resolve()) for v in value]


def search_path(
    repo: Path, first: Sequence[str] = (), env: Mapping[str, str] | None = None
) -> list[str]:
    """The folders the test run puts before the interpreter's own: ``first`` (pytest's
    ``pythonpath``), the repository (``python -m`` puts the current folder first), then
    ``PYTHONPATH``'s entries (relative ones from the repository)."""
    entries = [*first, str(repo.resolve())]
    for entry in (env or os.environ).get("PYTHONPATH", "").split(os.pathsep):
        if entry:
            entries.append(entry if Path(entry).is_absolute() else str((repo / entry).resolve()))
    return list(dict.fromkeys(entries))


def probe(python: Path, script: str, args: Sequence[object]) -> object | None:
    """Run ``script`` in ``python`` isolated (``-I``) from a folder outside any repository,
    its arguments as JSON; its JSON answer, or None when it failed or timed out.

    The script must import only the standard library, before it puts the folders it
    was handed on ``sys.path``.
    """
    argv = [str(python), "-I", "-c", script, *(json.dumps(a) for a in args)]
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    try:
        with tempfile.TemporaryDirectory(prefix="changeloop-probe-") as outside:
            proc = subprocess.run(
                argv,
                cwd=outside,
                env=env,
                capture_output=True,
                text=True,
                timeout=TIMEOUT_S,
                check=False,
            )
        answer: object = json.loads(proc.stdout) if proc.returncode == 0 else None
    except (OSError, ValueError, subprocess.TimeoutExpired):
        return None
    return answer


def runs_tests(argv: Sequence[str]) -> bool:
    """Whether ``argv`` runs pytest or ``-m unittest`` directly (a ``command`` provider may)."""
    words = [a.rsplit("/", 1)[-1] for a in argv]
    unittest = any(w == "-m" and n == "unittest" for w, n in pairwise(words))
    return unittest or pytest_position(argv) is not None


def outside_packages(repo: Path, argv: Sequence[str]) -> list[Shadowed]:
    """The project's packages the command's interpreter would import from outside ``repo``."""
    found = interpreter_of(repo, argv)
    packages = project_packages(repo) if found else {}
    if found is None or not packages:
        return []
    written, python = found
    if not trusted_interpreter(repo, python):
        return []
    extra = pytest_pythonpath(repo) if pytest_position(argv) is not None else []
    where = probe(python, _SCRIPT, [search_path(repo, extra), sorted(packages)])
    if not isinstance(where, dict):
        return []
    out: list[Shadowed] = []
    for name, own in packages.items():
        paths = where.get(name) if isinstance(where, dict) else None
        if not isinstance(paths, list):
            continue  # not importable at all: the run itself will say so
        foreign = [p for p in paths if isinstance(p, str) and not inside(p, [repo])]
        if foreign:
            out.append(Shadowed(name, foreign[0], own, written))
    return out

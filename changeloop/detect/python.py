"""Python: the runner the maintainers run (tox, nox, Makefile, CI), pytest from
manifests, the repository's own virtualenv, or test imports.

A command the project's own configuration runs (``python -m unittest`` in
tox.ini) comes first among the manifest signals, so it decides the runner over
the mere presence of pytest configuration (docs/design.md).

The environment is the repository's (``.venv/``, ``venv/``), never the
interpreter changeloop runs in: an empty repository has no signal. Installed
versions come from ``*.dist-info`` directory names and ``METADATA`` files, read
as text — nothing is imported.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from changeloop.detect import maintainers
from changeloop.detect.types import Detection
from changeloop.project.manifests import (
    Unreadable,
    dig,
    head,
    normalize,
    read_ini,
    read_toml,
    requirement,
    requirement_lines,
    walk_files,
)

VENV_DIRS = (".venv", "venv", "env", ".env")
INI_FILES = (("pytest.ini", "pytest"), ("tox.ini", "pytest"), ("setup.cfg", "tool:pytest"))


def detect(repo: Path, unreadable: Unreadable | None = None) -> list[Detection]:
    """Every Python test-runner signal in ``repo``, best first within each source."""
    out: list[Detection] = []
    lock = lock_version(repo, "pytest")
    installed = venv_version(repo, "pytest")
    commands = [
        Detection("unittest", "python", "manifest", None, c.evidence, c.args)
        if c.runner == "unittest"
        else Detection("pytest", "python", "manifest", lock or installed, c.evidence)
        for c in maintainers.test_commands(repo)
    ]
    # The maintainers' first command decides the runner: a unittest command goes
    # before pytest configuration; a pytest one after it (pytest's own
    # configuration stays the evidence shown for a pytest project).
    leads = bool(commands) and commands[0].adapter == "unittest"
    if leads:
        out.extend(commands)
    for evidence, pin in manifest_signals(repo):
        out.append(Detection("pytest", "python", "manifest", pin or lock or installed, evidence))
    if not leads:
        out.extend(commands)
    if installed is not None:
        site = venv_site_packages(repo)
        where = site.relative_to(repo).as_posix() if site else ".venv"
        out.append(
            Detection("pytest", "python", "environment", installed, f"{where} pytest (dist-info)")
        )
    # Source imports are the weakest signal: walk the tree for them only when
    # nothing stronger spoke (a 20,000-file repository costs a full walk).
    importer = None if out else source_importer(repo, unreadable)
    if importer is not None:
        out.append(
            Detection("pytest", "python", "source_import", lock or installed, f"{importer} import")
        )
    return out


def manifest_signals(repo: Path) -> list[tuple[str, str | None]]:
    """(evidence, pinned version) for each manifest naming pytest."""
    found: list[tuple[str, str | None]] = []
    pyproject = read_toml(repo / "pyproject.toml")
    if pyproject is not None:
        if isinstance(dig(pyproject, "tool", "pytest", "ini_options"), dict):
            found.append(("pyproject.toml [tool.pytest.ini_options]", None))
        elif _pytest9_table(dig(pyproject, "tool", "pytest")):
            found.append(("pyproject.toml [tool.pytest]", None))  # pytest 9's native table
        found.extend(_pyproject_dependencies(pyproject))
    for name, section in INI_FILES:
        ini = read_ini(repo / name)
        if ini is not None and ini.has_section(section):
            found.append((f"{name} [{section}]", None))
    setup_cfg = read_ini(repo / "setup.cfg")
    if setup_cfg is not None:
        for section in ("options.extras_require",):
            if setup_cfg.has_section(section):
                for key, value in setup_cfg.items(section):
                    pin = _find_in_specs(value.splitlines())
                    if pin is not None:
                        found.append((f"setup.cfg [{section}] {key}", pin[0]))
    for req in _requirements_files(repo):
        pin = _find_in_specs(requirement_lines(req))
        if pin is not None:
            found.append((f"{req.relative_to(repo).as_posix()} pytest", pin[0]))
    return found


def _pytest9_table(table: Any) -> bool:
    """pytest 9 reads settings straight from ``[tool.pytest]`` (not only ``ini_options``)."""
    return isinstance(table, dict) and any(k != "ini_options" for k in table)


def pytest_settings(pyproject: Any) -> dict[str, Any]:
    """pytest's settings from pyproject.toml: ``[tool.pytest.ini_options]`` or pytest 9's table."""
    table = dig(pyproject, "tool", "pytest")
    if not isinstance(table, dict):
        return {}
    legacy = table.get("ini_options")
    if isinstance(legacy, dict):
        return legacy
    return table


def _find_in_specs(specs: list[Any]) -> tuple[str | None] | None:
    for spec in specs:
        if not isinstance(spec, str):
            continue
        parsed = requirement(spec)
        if parsed is not None and parsed[0] == "pytest":
            return (parsed[1],)
    return None


def _pyproject_dependencies(data: dict[str, Any]) -> list[tuple[str, str | None]]:
    found: list[tuple[str, str | None]] = []
    deps = dig(data, "project", "dependencies")
    if isinstance(deps, list) and (pin := _find_in_specs(deps)) is not None:
        found.append(("pyproject.toml [project] dependencies", pin[0]))
    extras = dig(data, "project", "optional-dependencies")
    if isinstance(extras, dict):
        for extra, specs in extras.items():
            if isinstance(specs, list) and (pin := _find_in_specs(specs)) is not None:
                found.append((f"pyproject.toml [project.optional-dependencies] {extra}", pin[0]))
    groups = data.get("dependency-groups")
    if isinstance(groups, dict):
        for group, specs in groups.items():
            if isinstance(specs, list) and (pin := _find_in_specs(specs)) is not None:
                found.append((f"pyproject.toml [dependency-groups] {group}", pin[0]))
    poetry = dig(data, "tool", "poetry")
    if isinstance(poetry, dict):
        tables: list[tuple[str, Any]] = [
            ("tool.poetry.dependencies", poetry.get("dependencies")),
            ("tool.poetry.dev-dependencies", poetry.get("dev-dependencies")),
        ]
        groups = poetry.get("group")
        if isinstance(groups, dict):
            for group, table in groups.items():
                tables.append(
                    (f"tool.poetry.group.{group}.dependencies", dig(table, "dependencies"))
                )
        for where, table in tables:
            if not isinstance(table, dict):
                continue
            for name, spec in table.items():
                if normalize(str(name)) == "pytest":
                    found.append((f"pyproject.toml [{where}] pytest", _poetry_pin(spec)))
    return found


def _poetry_pin(spec: Any) -> str | None:
    if isinstance(spec, dict):
        spec = spec.get("version")
    if isinstance(spec, str) and re.fullmatch(r"=*\s*[0-9][0-9A-Za-z.+-]*", spec.strip()):
        return spec.strip().lstrip("=").strip()
    return None


def _requirements_files(repo: Path) -> list[Path]:
    files = sorted(repo.glob("requirements*.txt")) + sorted(repo.glob("requirements/*.txt"))
    files += sorted(repo.glob("*requirements*.in"))
    return [f for f in files if f.is_file()]


def lock_version(repo: Path, package: str) -> str | None:
    """The locked version from poetry.lock, uv.lock or pdm.lock (TOML ``[[package]]``)."""
    for name in ("uv.lock", "poetry.lock", "pdm.lock"):
        data = read_toml(repo / name)
        packages = data.get("package") if data else None
        if not isinstance(packages, list):
            continue
        for entry in packages:
            if isinstance(entry, dict) and normalize(str(entry.get("name", ""))) == package:
                version = entry.get("version")
                return str(version) if version is not None else None
    return None


def venv_site_packages(repo: Path) -> Path | None:
    for name in VENV_DIRS:
        venv = repo / name
        if not (venv / "pyvenv.cfg").is_file():
            continue
        candidates = [
            *sorted(venv.glob("lib/python*/site-packages")),
            venv / "Lib" / "site-packages",
        ]
        for site in candidates:
            if site.is_dir():
                return site
    return None


def venv_python(repo: Path) -> str | None:
    """The repository's own interpreter, relative to the repository, if it has a virtualenv."""
    for name in VENV_DIRS:
        if (repo / name / "pyvenv.cfg").is_file():
            for rel in ("bin/python", "Scripts/python.exe"):
                if (repo / name / rel).exists():
                    return f"{name}/{rel}"
    return None


def venv_version(repo: Path, package: str) -> str | None:
    """Version of ``package`` installed in the repository's virtualenv, from dist-info names."""
    site = venv_site_packages(repo)
    if site is None:
        return None
    for dist in sorted(site.glob("*.dist-info")):
        name, _, version = dist.name[: -len(".dist-info")].partition("-")
        if normalize(name) == package and version:
            return version
    return None


_IMPORT = re.compile(r"^\s*(?:import\s+pytest\b|from\s+pytest\b)", re.MULTILINE)


def source_importer(repo: Path, unreadable: Unreadable | None = None) -> str | None:
    """The first test file (or conftest) that imports pytest, relative to ``repo``."""
    for path in walk_files(repo, (".py",), unreadable=unreadable):
        name = path.name
        if not (name.startswith("test_") or name.endswith("_test.py") or name == "conftest.py"):
            continue
        if _IMPORT.search(head(path)):
            return path.relative_to(repo).as_posix()
    return None

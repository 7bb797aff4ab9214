"""The repository's own top-level import packages, from its layout and build config.

Example::

    >>> project_packages(Path("."))
    {'changeloop': 'changeloop'}

A receipt binds to a content tree, so the tests must have run that tree's code
 (docs/bootstrap.md). To check where a
package was imported from, first know which packages are the project's own:

- declared: flit ``[tool.flit.module] name``; setuptools ``[tool.setuptools]
  packages`` / ``py-modules`` / ``packages.find.where``; hatch
  ``[tool.hatch.build.targets.wheel] packages``; setup.cfg ``[options]
  packages`` / ``py_modules`` / ``[options.packages.find] where``;
  ``[project] name`` when a package of that name exists;
- laid out: ``src/<pkg>/__init__.py`` and ``<pkg>/__init__.py`` at the top
  (test, docs and example folders are not the project's importable code).

Only names whose code exists in the repository are returned (name → path
relative to the repository). Everything is read as data; nothing is imported.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from changeloop.project.manifests import SKIP_DIRS, dig, exists, read_ini, read_toml

NOT_PACKAGES = frozenset(
    {
        "tests",
        "test",
        "testing",
        "docs",
        "doc",
        "examples",
        "example",
        "scripts",
        "benchmarks",
        "bench",
        "tools",
        "openspec",
        "conftest",
        "setup",
        "noxfile",
        "site-packages",
    }
)
_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def project_packages(repo: Path) -> dict[str, str]:
    """Top-level import name → its path relative to ``repo`` (a package dir or a module)."""
    roots, names = _declared(repo)
    found: dict[str, str] = {}
    for name in names:
        where = _locate(repo, name, roots)
        if where is not None:
            found.setdefault(name, where)
    for base in ("src", "."):
        folder = repo / base
        try:
            entries = sorted(folder.iterdir()) if folder.is_dir() else []
        except OSError:
            continue
        for entry in entries:
            name = entry.name
            if name in found or name in NOT_PACKAGES or name in SKIP_DIRS:
                continue
            if _IDENT.match(name) and exists(entry / "__init__.py"):
                found[name] = entry.relative_to(repo).as_posix()
    return dict(sorted(found.items()))


def _locate(repo: Path, name: str, roots: list[str]) -> str | None:
    for root in [*roots, "src", "."]:
        base = repo / root
        for candidate in (base / name, base / f"{name}.py"):
            is_package = candidate.suffix != ".py" and exists(candidate / "__init__.py")
            if is_package or (candidate.suffix == ".py" and exists(candidate)):
                return candidate.relative_to(repo).as_posix()
    return None


def _top(value: Any) -> str | None:
    if not isinstance(value, str) or not value.strip():
        return None
    name = value.strip().split(".")[0]
    return name if _IDENT.match(name) else None


def _declared(repo: Path) -> tuple[list[str], list[str]]:
    """(package roots, top-level names) the build configuration declares."""
    roots: list[str] = []
    names: list[str] = []
    data = read_toml(repo / "pyproject.toml") or {}
    flit = _top(dig(data, "tool", "flit", "module", "name"))
    if flit:
        names.append(flit)
    setuptools = dig(data, "tool", "setuptools")
    if isinstance(setuptools, dict):
        packages = setuptools.get("packages")
        if isinstance(packages, list):
            names.extend(n for n in map(_top, packages) if n)
        where = dig(setuptools, "packages", "find", "where")
        if isinstance(where, list):
            roots.extend(str(w).strip("/") or "." for w in where if isinstance(w, str))
        modules = setuptools.get("py-modules")
        if isinstance(modules, list):
            names.extend(n for n in map(_top, modules) if n)
        package_dir = setuptools.get("package-dir")
        if isinstance(package_dir, dict) and isinstance(package_dir.get(""), str):
            roots.append(package_dir[""].strip("/") or ".")
    hatch = dig(data, "tool", "hatch", "build", "targets", "wheel", "packages")
    if isinstance(hatch, list):
        for entry in hatch:
            if isinstance(entry, str) and entry.strip("/"):
                path = entry.strip("/")
                parent, _, leaf = path.rpartition("/")
                if _IDENT.match(leaf):
                    names.append(leaf)
                    roots.append(parent or ".")
    cfg = read_ini(repo / "setup.cfg")
    if cfg is not None:
        if cfg.has_option("options", "packages"):
            value = cfg.get("options", "packages").strip()
            if not value.startswith("find"):
                names.extend(n for n in map(_top, value.split()) if n)
        if cfg.has_option("options", "py_modules"):
            names.extend(n for n in map(_top, cfg.get("options", "py_modules").split()) if n)
        if cfg.has_option("options.packages.find", "where"):
            roots.append(cfg.get("options.packages.find", "where").strip().strip("/") or ".")
        if cfg.has_option("options", "package_dir"):
            for line in cfg.get("options", "package_dir").splitlines():
                key, _, value = line.partition("=")
                if not key.strip() and value.strip():
                    roots.append(value.strip().strip("/") or ".")
    project = dig(data, "project", "name")
    if isinstance(project, str):
        candidate = re.sub(r"[-.]+", "_", project.strip()).lower()
        if _IDENT.match(candidate):
            names.append(candidate)
    return roots, names

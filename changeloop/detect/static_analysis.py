"""Derived static analysis: the linters a repository configures, else clippy for Rust.

Only what the repository's own files configure is derived with high confidence;
:data:`STATIC_ANALYSIS_FILES` names every file that decides it.
"""

from __future__ import annotations

from pathlib import Path

from changeloop.detect.derived_names import provider_name
from changeloop.fingerprints.environment import DERIVED_PYTHON
from changeloop.model import Confidence, Provider
from changeloop.project.manifests import dig, read_ini, read_json, read_toml

# The files :func:`linters` and :func:`clippy` read, at a repository's top level: what a
# derived static-analysis provider depends on (keep the three together).
STATIC_ANALYSIS_FILES = (
    "pyproject.toml",
    "ruff.toml",
    ".ruff.toml",
    "mypy.ini",
    "setup.cfg",
    "package.json",
    "Cargo.toml",
    "clippy.toml",
    ".clippy.toml",
)


def linters(repo: Path) -> list[tuple[str, tuple[str, ...], str]]:
    """(tool, argv, evidence) for each linter the repository configures."""
    found: list[tuple[str, tuple[str, ...], str]] = []
    pyproject = read_toml(repo / "pyproject.toml")
    interpreter = DERIVED_PYTHON
    if isinstance(dig(pyproject, "tool", "ruff"), dict):
        found.append(
            ("ruff", (interpreter, "-m", "ruff", "check", "."), "pyproject.toml [tool.ruff]")
        )
    else:
        for name in ("ruff.toml", ".ruff.toml"):
            if (repo / name).is_file():
                found.append(("ruff", (interpreter, "-m", "ruff", "check", "."), name))
                break
    mypy_evidence = None
    mypy_files = False  # a configured `files` is what mypy checks; "." would override it
    mypy_table = dig(pyproject, "tool", "mypy")
    if isinstance(mypy_table, dict):
        mypy_evidence = "pyproject.toml [tool.mypy]"
        mypy_files = "files" in mypy_table
    else:
        for name in ("mypy.ini", "setup.cfg"):
            cfg = read_ini(repo / name)
            if cfg is not None and cfg.has_section("mypy"):
                mypy_evidence = f"{name} [mypy]"
                mypy_files = cfg.has_option("mypy", "files")
                break
    if mypy_evidence is not None:
        target: tuple[str, ...] = () if mypy_files else (".",)
        found.append(("mypy", (interpreter, "-m", "mypy", *target), mypy_evidence))
    package = read_json(repo / "package.json")
    scripts = package.get("scripts") if package else None
    if isinstance(scripts, dict):
        for script in ("lint", "check"):
            if isinstance(scripts.get(script), str):
                found.append((script, ("npm", "run", script), f"package.json scripts.{script}"))
                break
    return found


def clippy(repo: Path) -> tuple[tuple[str, ...], str, Confidence] | None:
    """``cargo clippy`` for a Rust repository: high confidence only when clippy is configured."""
    cargo = read_toml(repo / "Cargo.toml")
    if cargo is None:
        return None
    argv = ("cargo", "clippy", "--all-targets", "--", "-D", "warnings")
    for name in ("clippy.toml", ".clippy.toml"):
        if (repo / name).is_file():
            return argv, name, "high"
    if dig(cargo, "lints", "clippy") is not None or dig(cargo, "workspace", "lints", "clippy"):
        return argv, "Cargo.toml [lints.clippy]", "high"
    return argv, "Cargo.toml (static-analysis requested)", "low"


def static_providers(repo_name: str, path: Path, single: bool) -> dict[str, tuple[Provider, str]]:
    """One command provider per configured linter (clippy when there is none), named
    ``static-analysis`` for the first."""
    out: dict[str, tuple[Provider, str]] = {}
    tools: list[tuple[str, tuple[str, ...], Confidence, str]] = [
        (tool, argv, "high", where) for tool, argv, where in linters(path)
    ]
    if not tools and (found := clippy(path)) is not None:
        tools.append(("clippy", found[0], found[2], found[1]))
    for index, (tool, argv, confidence, where) in enumerate(tools):
        name = provider_name("static-analysis", repo_name, single, None if index == 0 else tool)
        out[name] = (
            Provider(
                name=name,
                adapter="command",
                capability="static-analysis",
                repository=repo_name,
                command=argv,
                origin="derived",
                confidence=confidence,
            ),
            where,
        )
    return out

"""What a Python project's build needs that the project does not install, and why an
install failed.

Installing a project builds it, and a build backend may run programs of its own:
``hatch-jupyter-builder`` runs ``npm``/``pnpm``/``yarn`` (its ``npm`` build
kwarg), ``maturin`` and ``setuptools-rust`` run ``cargo``. Doctor names such a
program before the install (:func:`needed`) and, after an install doctor
printed has failed, reads pip's own log of it (``--log`` into the virtualenv,
:data:`LOG_NAME`) for why (:func:`last_failure`): a program the build did not
find is said by name, never answered by printing the same failing line again.

Example::

    needed(Path("anywidget"))          # [("pnpm", "pyproject.toml [tool.hatch.build.hooks
                                       #   .jupyter-builder.build-kwargs] npm")]
    last_failure(Path(".venv/changeloop-install.log"))
    # InstallFailure(tool="pnpm", line="… Could not find cmd (pnpm) in path")

Reads files only; runs nothing.
"""

from __future__ import annotations

import re
import shlex
import shutil
from dataclasses import dataclass
from pathlib import Path

from changeloop.project.manifests import dig, read_toml

LOG_NAME = "changeloop-install.log"  # pip's --log, inside the virtualenv it installs into
LOG_LIMIT = 4 * 1024 * 1024  # the tail of a long log is what says why it failed
_RUN_START = re.compile(r"^\S+ Using pip \S+ from ", re.MULTILINE)
# (pattern, the program it names: a group, or fixed)
_MISSING: tuple[tuple[re.Pattern[str], str | None], ...] = (
    (re.compile(r"Could not find cmd \(([\w.+-]+)\) in path"), None),  # hatch-jupyter-builder
    (re.compile(r"No such file or directory: '([\w.+-]+)'"), None),  # subprocess, no such program
    (re.compile(r"(?:^|[\s:])([\w.+-]+): (?:command )?not found\s*$", re.MULTILINE), None),
    (re.compile(r"command not found: ([\w.+-]+)"), None),
    (re.compile(r"can't find Rust compiler|Cargo, the Rust package manager, is not inst"), "cargo"),
    (re.compile(r"CMake must be installed|cmake: not found"), "cmake"),
)
_ERROR = re.compile(r"^\S+ (ERROR: .*|error: .*)$", re.MULTILINE)
_SUCCESS = re.compile(r"^\S+ Successfully installed ", re.MULTILINE)


@dataclass(frozen=True)
class InstallFailure:
    """Why the last install into a virtualenv failed, as pip's log says it."""

    log: Path
    tool: str | None  # a program the build needed and did not find, when the log names one
    line: str  # the line that says so (else the last error line)


def needed(repo: Path) -> list[tuple[str, str]]:
    """(program, where the project says so) the project's build runs, from pyproject.toml."""
    data = read_toml(repo / "pyproject.toml")
    if data is None:
        return []
    out: list[tuple[str, str]] = []
    hook = dig(data, "tool", "hatch", "build", "hooks", "jupyter-builder")
    if isinstance(hook, dict) and not _built_already(repo, hook.get("skip-if-exists")):
        kwargs = hook.get("build-kwargs") if isinstance(hook.get("build-kwargs"), dict) else {}
        npm = kwargs.get("npm", "npm") if isinstance(kwargs, dict) else "npm"
        tool = npm[0] if isinstance(npm, list) and npm else npm
        if isinstance(tool, str) and tool:
            where = "[tool.hatch.build.hooks.jupyter-builder.build-kwargs] npm"
            out.append((tool.rsplit("/", 1)[-1], f"pyproject.toml {where}"))
    system = dig(data, "build-system")
    backend = system.get("build-backend") if isinstance(system, dict) else None
    requires = system.get("requires") if isinstance(system, dict) else None
    rusty = backend == "maturin" or any(
        isinstance(r, str) and re.match(r"(maturin|setuptools[-_]rust)\b", r)
        for r in requires or []
    )
    if rusty:
        out.append(("cargo", "pyproject.toml [build-system] (a Rust extension)"))
    return out


def _built_already(repo: Path, targets: object) -> bool:
    """hatch-jupyter-builder's ``skip-if-exists``: every target there, the build is skipped."""
    if not isinstance(targets, list) or not targets:
        return False
    return all(isinstance(t, str) and (repo / t).exists() for t in targets)


def missing_programs(repo: Path) -> list[tuple[str, str]]:
    """:func:`needed` programs that are not on PATH."""
    return [(tool, why) for tool, why in needed(repo) if shutil.which(tool) is None]


def log_of(venv_python: Path | None) -> Path | None:
    """Where pip's log of doctor's install into this virtualenv goes (its folder)."""
    if venv_python is None:
        return None
    venv = venv_python.parent.parent
    return venv / LOG_NAME


def last_failure(log: Path | None) -> InstallFailure | None:
    """Why the last install logged in ``log`` failed; None if it did not, or no log."""
    if log is None:
        return None
    try:
        with log.open("rb") as fh:
            size = fh.seek(0, 2)
            fh.seek(max(0, size - LOG_LIMIT))
            text = fh.read().decode("utf-8", errors="replace")
    except OSError:
        return None
    starts = list(_RUN_START.finditer(text))
    last = text[starts[-1].start() :] if starts else text
    if _SUCCESS.search(last):
        return None
    tool: str | None = None
    said = ""
    for pattern, fixed in _MISSING:
        for found in pattern.finditer(last):
            name = fixed or found.group(1)
            if name and not name.startswith(("-", ".")) and "/" not in name:
                tool, said = name, found.group(0).strip()
    errors = _ERROR.findall(last)
    if tool is None and not errors:
        return None
    line = said or (errors[-1].strip() if errors else "")
    return InstallFailure(log, tool, line[:300])


_RUSTUP = "curl --proto '=https' -sSf https://sh.rustup.rs | sh -s -- -y"


def install_for(repo: Path, tool: str) -> str | None:
    """The pasteable command that puts ``tool`` on PATH, where one is known."""

    from changeloop.detect.javascript import package_manager  # noqa: PLC0415 - detect.javascript pulls in yaml; only install hints need it

    if tool in ("pnpm", "yarn"):
        return f"npm i -g {shlex.quote(package_manager(repo, tool))}"
    if tool == "bun":
        return "npm i -g bun"
    if tool in ("cargo", "rustc"):
        return _RUSTUP
    return None

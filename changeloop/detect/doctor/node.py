"""Node projects as doctor sees them: which install command a lock file asks for, and
whether a tool is installed where a command runs.

Example::

    node_install(Path("web"), "vitest")   # "npm ci" (package-lock.json, npm on PATH)
    # pnpm-lock.yaml without pnpm on PATH, packageManager "pnpm@10.28.0+sha…":
    #   "npx -y pnpm@10.28.0 install --frozen-lockfile"
    bin_installed(Path("clack/packages/core"), Path("clack"), "vitest")  # member's .bin

Reads package.json and looks for lock files and tools on PATH; runs nothing.
"""

from __future__ import annotations

import re
import shlex
import shutil
from pathlib import Path

from changeloop.detect.javascript import package_manager, packages
from changeloop.project.manifests import read_json

__all__ = [
    "bin_installed",
    "manager_hint",
    "needs_node_modules",
    "node_install",
    "package_manager",
    "script_managers",
]

# lock file → (package manager, the command that installs exactly what it locks)
_LOCKS = (
    ("package-lock.json", "npm", "npm ci"),
    ("npm-shrinkwrap.json", "npm", "npm ci"),
    ("pnpm-lock.yaml", "pnpm", "pnpm install --frozen-lockfile"),
    ("yarn.lock", "yarn", "yarn install --frozen-lockfile"),
    ("bun.lock", "bun", "bun install --frozen-lockfile"),
    ("bun.lockb", "bun", "bun install --frozen-lockfile"),
)
_MANAGERS = ("pnpm", "yarn", "bun")


def node_install(repo: Path, package: str) -> str:
    """Install what the lock file says, with the package manager that wrote it.

    A package manager missing from PATH (pnpm without corepack) runs through npx at
    the version ``packageManager`` pins, so the pasted command works as printed.
    Without a lock file: ``npm install`` when package.json (or a workspace member's)
    declares the package, else ``npm i -D <package>``.
    """
    for lock, tool, command in _LOCKS:
        if (repo / lock).is_file():
            if shutil.which(tool) is not None:
                return command
            return f"npx -y {shlex.quote(package_manager(repo, tool))}{command[len(tool) :]}"
    if not package or _declared(repo, package):
        return "npm install"
    return f"npm i -D {shlex.quote(package)}"


def _declared(repo: Path, package: str) -> bool:
    for folder in packages(repo) or [repo]:
        data = read_json(folder / "package.json") or {}
        for key in ("devDependencies", "dependencies", "optionalDependencies"):
            table = data.get(key)
            if isinstance(table, dict) and package in table:
                return True
    return False


def manager_hint(repo: Path) -> str:
    """Why the install command runs its package manager through npx, when it does."""
    for lock, tool in (("pnpm-lock.yaml", "pnpm"), ("yarn.lock", "yarn"), ("bun.lockb", "bun")):
        if (repo / lock).is_file() and shutil.which(tool) is None:
            pinned = package_manager(repo, tool)
            return (
                f" ({lock} needs {tool}, which is not on PATH: the command runs {pinned} "
                f"through npx; to install it for good: `corepack enable` or `npm i -g {pinned}`)"
            )
    return ""


def _up(where: Path) -> list[Path]:
    """``where`` and its parents, as Node's resolution walks them (past the repository
    too: a sandbox inside ``.changeloop/`` reaches the user's node_modules the same way)."""
    return [where, *where.parents]


def bin_installed(where: Path, tool: str, package: str | None = None) -> bool:
    """``node_modules/.bin/<tool>`` (or the ``package`` providing it) in ``where`` or a
    folder above it: what npx finds before it would download anything."""
    for base in _up(where):
        modules = base / "node_modules"
        binary = modules / ".bin" / tool
        if binary.exists() or binary.is_symlink():
            return True
        if package is not None and (modules / package / "package.json").is_file():
            return True
    return False


def needs_node_modules(where: Path, repo: Path | None = None) -> bool:
    """package.json (where the command runs) declares dependencies, none installed (no
    node_modules in that folder or up the tree)."""
    data = read_json(where / "package.json") or read_json((repo or where) / "package.json") or {}
    if not any(
        isinstance(data.get(k), dict) and data[k] for k in ("dependencies", "devDependencies")
    ):
        return False
    return not any((d / "node_modules").is_dir() for d in _up(where))


_SEGMENTS = re.compile(r"&&|;|\|\|")


def script_managers(pkg_dir: Path, script: str, depth: int = 0) -> list[str]:
    """The package managers other than npm the script runs (following `npm run`)."""
    scripts = (read_json(pkg_dir / "package.json") or {}).get("scripts")
    if not isinstance(scripts, dict) or not isinstance(scripts.get(script), str) or depth > 4:
        return []
    found: list[str] = []
    texts = [scripts[script]] + (
        [scripts[f"pre{script}"]] if isinstance(scripts.get(f"pre{script}"), str) else []
    )
    for text in texts:
        for segment in _SEGMENTS.split(text):
            try:
                words = shlex.split(segment)
            except ValueError:
                words = segment.split()
            while words and "=" in words[0] and not words[0].startswith("-"):
                words = words[1:]
            if not words:
                continue
            if words[0] in _MANAGERS and words[0] not in found:
                found.append(words[0])
            if words[:2] == ["npm", "run"] and len(words) > 2:
                found += [
                    m for m in script_managers(pkg_dir, words[2], depth + 1) if m not in found
                ]
    return found

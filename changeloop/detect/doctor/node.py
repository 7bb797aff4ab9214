"""Node projects as doctor sees them: which install command a lock file asks for.

Example::

    node_install(Path("web"), "vitest")   # "npm ci" (package-lock.json, npm on PATH)
    # pnpm-lock.yaml without pnpm on PATH, packageManager "pnpm@10.28.0+sha…":
    #   "npx -y pnpm@10.28.0 install --frozen-lockfile"

Reads package.json and looks for lock files and tools on PATH; runs nothing.
"""

from __future__ import annotations

import shlex
import shutil
from pathlib import Path

from changeloop.project.manifests import read_json

# lock file → (package manager, the command that installs exactly what it locks)
_LOCKS = (
    ("package-lock.json", "npm", "npm ci"),
    ("pnpm-lock.yaml", "pnpm", "pnpm install --frozen-lockfile"),
    ("yarn.lock", "yarn", "yarn install --frozen-lockfile"),
    ("bun.lock", "bun", "bun install --frozen-lockfile"),
    ("bun.lockb", "bun", "bun install --frozen-lockfile"),
)


def node_install(repo: Path, package: str) -> str:
    """Install what the lock file says, with the package manager that wrote it.

    A package manager missing from PATH (pnpm without corepack) runs through npx at
    the version ``packageManager`` pins, so the pasted command works as printed.
    Without a lock file: ``npm i -D <package>``.
    """
    for lock, tool, command in _LOCKS:
        if (repo / lock).is_file():
            if shutil.which(tool) is not None:
                return command
            return f"npx -y {shlex.quote(package_manager(repo, tool))}{command[len(tool) :]}"
    return f"npm i -D {package}"


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


def package_manager(repo: Path, tool: str) -> str:
    """``pnpm@10.28.0`` from package.json's ``packageManager`` (hash dropped), else ``pnpm``."""
    pinned = (read_json(repo / "package.json") or {}).get("packageManager")
    if isinstance(pinned, str) and pinned.startswith(f"{tool}@"):
        return pinned.split("+", 1)[0]
    return tool


def needs_node_modules(repo: Path) -> bool:
    """package.json declares dependencies, none installed (no node_modules up the tree)."""
    data = read_json(repo / "package.json") or {}
    if not any(
        isinstance(data.get(k), dict) and data[k] for k in ("dependencies", "devDependencies")
    ):
        return False
    return not any((d / "node_modules").is_dir() for d in (repo, *repo.parents))

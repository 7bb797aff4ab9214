"""JavaScript/TypeScript unit tests (vitest, jest, mocha, node --test) and Playwright.

package.json is read as JSON and workspaces (npm/yarn ``workspaces``, pnpm's
``pnpm-workspace.yaml``) are followed to their members; versions come from
package-lock.json or ``node_modules/<pkg>/package.json``. No script is run.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from changeloop.detect.types import Detection
from changeloop.project.manifests import Unreadable, head, read_json, walk_files

# adapter -> (npm package, test type, binary in node_modules/.bin)
TOOLS: dict[str, tuple[str, str, str]] = {
    "vitest": ("vitest", "javascript", "vitest"),
    "jest": ("jest", "javascript", "jest"),
    "mocha": ("mocha", "javascript", "mocha"),
    "playwright": ("@playwright/test", "browser", "playwright"),
}
CONFIG_FILES: dict[str, tuple[str, ...]] = {
    "vitest": ("vitest.config", "vitest.workspace"),
    "jest": ("jest.config",),
    "mocha": (".mocharc",),
    "playwright": ("playwright.config",),
}
CONFIG_EXTS = (".ts", ".mts", ".cts", ".js", ".mjs", ".cjs", ".json", ".jsonc", ".yaml", ".yml")
TEST_DIRS = frozenset({"test", "tests", "__tests__", "e2e"})
SOURCE_EXTS = (".js", ".mjs", ".cjs", ".jsx", ".ts", ".mts", ".cts", ".tsx")
_NODE_TEST = re.compile(r"(^|[\s;&|])node\s+(?:[^;&|]*\s)?--test\b")
_IMPORTS: tuple[tuple[str, str], ...] = (
    ("@playwright/test", "playwright"),
    ("vitest", "vitest"),
    ("@jest/globals", "jest"),
    ("mocha", "mocha"),
    ("node:test", "node-test"),
)


def packages(repo: Path) -> list[Path]:
    """Directories holding a package.json: the root first, then workspace members."""
    root = read_json(repo / "package.json")
    out: list[Path] = [repo] if root is not None else []
    patterns: list[str] = []
    if root is not None:
        ws = root.get("workspaces")
        if isinstance(ws, dict):
            ws = ws.get("packages")
        if isinstance(ws, list):
            patterns += [p for p in ws if isinstance(p, str)]
    pnpm = repo / "pnpm-workspace.yaml"
    if pnpm.is_file():
        try:
            data = yaml.safe_load(pnpm.read_text(encoding="utf-8"))
        except (OSError, yaml.YAMLError):
            data = None
        listed = data.get("packages") if isinstance(data, dict) else None
        if isinstance(listed, list):
            patterns += [p for p in listed if isinstance(p, str)]
    for pattern in patterns:
        if pattern.startswith("!") or pattern.startswith("/") or ".." in pattern.split("/"):
            continue
        for member in sorted(repo.glob(pattern.rstrip("/"))):
            if member.is_dir() and (member / "package.json").is_file() and member not in out:
                out.append(member)
    return out


def detect(repo: Path, unreadable: Unreadable | None = None) -> list[Detection]:
    out: list[Detection] = []
    dirs = packages(repo)
    for pkg_dir in dirs:
        out.extend(_manifest(repo, pkg_dir))
    for pkg_dir in dirs or [repo]:
        out.extend(_environment(repo, pkg_dir))
    # The weakest signal, and a walk of the whole tree: only when nothing stronger spoke.
    importer = None if out else _source_import(repo, unreadable)
    if importer is not None:
        adapter, rel = importer
        _, test_type, _ = TOOLS.get(adapter, ("", "javascript", ""))
        out.append(
            Detection(adapter, test_type, "source_import", version(repo, adapter), f"{rel} import")
        )
    return out


def _rel(repo: Path, path: Path) -> str:
    return path.relative_to(repo).as_posix()


def _manifest(repo: Path, pkg_dir: Path) -> list[Detection]:
    data = read_json(pkg_dir / "package.json") or {}
    manifest = _rel(repo, pkg_dir / "package.json")
    found: list[Detection] = []
    scripts = data.get("scripts") if isinstance(data.get("scripts"), dict) else {}
    test_script = scripts.get("test") if isinstance(scripts, dict) else None
    script_named: list[str] = []
    if isinstance(test_script, str):
        if _NODE_TEST.search(test_script):
            found.append(
                Detection("node-test", "javascript", "manifest", None, f"{manifest} scripts.test")
            )
        script_named = [a for a in TOOLS if re.search(rf"\b{a}\b", test_script)]
    # the runner the test script names comes first; then dependencies, then config files
    for adapter in script_named + [a for a in TOOLS if a not in script_named]:
        package, test_type, _ = TOOLS[adapter]
        key = _dependency_key(data, package)
        config = _config_file(pkg_dir, adapter)
        if key is not None:
            evidence = f"{manifest} {key}.{package}"
            pin = _exact(data[key][package])
        elif adapter in script_named:
            evidence, pin = f"{manifest} scripts.test", None
        elif config is not None:
            evidence, pin = _rel(repo, config), None
        else:
            continue
        found.append(
            Detection(
                adapter, test_type, "manifest", version(repo, adapter, pkg_dir) or pin, evidence
            )
        )
    return found


def _dependency_key(data: dict[str, Any], package: str) -> str | None:
    for key in ("devDependencies", "dependencies"):
        table = data.get(key)
        if isinstance(table, dict) and package in table:
            return key
    return None


def _exact(spec: Any) -> str | None:
    if isinstance(spec, str) and re.fullmatch(r"[0-9]+\.[0-9]+\.[0-9]+[0-9A-Za-z.+-]*", spec):
        return spec
    return None


def _config_file(pkg_dir: Path, adapter: str) -> Path | None:
    for stem in CONFIG_FILES[adapter]:
        for ext in CONFIG_EXTS:
            if (pkg_dir / f"{stem}{ext}").is_file():
                return pkg_dir / f"{stem}{ext}"
    return None


def _environment(repo: Path, pkg_dir: Path) -> list[Detection]:
    found: list[Detection] = []
    for adapter, (_package, test_type, binary) in TOOLS.items():
        bin_path = pkg_dir / "node_modules" / ".bin" / binary
        if bin_path.exists() or bin_path.is_symlink():
            found.append(
                Detection(
                    adapter,
                    test_type,
                    "environment",
                    version(repo, adapter, pkg_dir),
                    f"{_rel(repo, bin_path)}",
                )
            )
    return found


def version(repo: Path, adapter: str, pkg_dir: Path | None = None) -> str | None:
    """Locked (package-lock.json) or installed (node_modules) version; None when unknown."""
    if adapter == "node-test":
        return None
    package = TOOLS[adapter][0]
    lock = read_json(repo / "package-lock.json")
    entries = lock.get("packages") if lock else None
    if isinstance(entries, dict):
        entry = entries.get(f"node_modules/{package}")
        if isinstance(entry, dict) and isinstance(entry.get("version"), str):
            return str(entry["version"])
    for base in (pkg_dir, repo):
        if base is None:
            continue
        meta = read_json(base / "node_modules" / package / "package.json")
        if meta is not None and isinstance(meta.get("version"), str):
            return str(meta["version"])
    return None


def installed(repo: Path, package: str) -> bool:
    """Whether ``package`` is present under the repository's node_modules (root or a member)."""
    return any(
        (d / "node_modules" / package / "package.json").is_file() for d in packages(repo) or [repo]
    )


def _source_import(repo: Path, unreadable: Unreadable | None = None) -> tuple[str, str] | None:
    for path in walk_files(repo, SOURCE_EXTS, unreadable=unreadable):
        name = path.name
        in_test_dir = bool(TEST_DIRS.intersection(path.relative_to(repo).parts[:-1]))
        if not re.search(r"\.(test|spec)\.[cm]?[jt]sx?$", name) and not in_test_dir:
            continue
        text = head(path)
        for module, adapter in _IMPORTS:
            if re.search(rf"""(from\s+|require\(\s*|import\s+)['"]{re.escape(module)}['"]""", text):
                return adapter, _rel(repo, path)
    return None


def package_manager(repo: Path, tool: str) -> str:
    """``pnpm@10.28.0`` from package.json's ``packageManager`` (hash dropped), else ``pnpm``."""
    pinned = (read_json(repo / "package.json") or {}).get("packageManager")
    if isinstance(pinned, str) and pinned.startswith(f"{tool}@"):
        return pinned.split("+", 1)[0]
    return tool

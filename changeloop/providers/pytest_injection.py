"""Put changeloop's pytest plugin into a project's own pytest, and read what it recorded.

Example::

    injected = inject(argv, env, run_dir, packages={"mylib": "src/mylib"})
    result = await run(injected.argv, env=injected.env, ...)
    findings = outside_imports(injected, roots=[sandbox, checkout], packages=..., shown=checkout)

The plugin (``changeloop/pytest_plugin.py``, dependency-free) is copied as
``changeloop_claims.py`` into the provider's run directory, which goes first on
``PYTHONPATH``; ``-p changeloop_claims`` follows the ``pytest`` word of a
command that runs pytest directly (``pytest``, ``python -m pytest``, ``uv run
pytest``). Commands that do not run pytest themselves (tox, make) are left
alone. The plugin writes where each of the repository's packages was imported
from; a package imported from outside the repository and its sandbox — or
from any ``site-packages`` — means the tests ran an installed copy, not the
content the receipt binds to (finding ``imported-from-outside``).
"""

from __future__ import annotations

import json
import shlex
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from changeloop.outcome import Finding

PLUGIN = "changeloop_claims"
# The plugin file itself (never imported here: it imports pytest, which changeloop
# does not depend on) and the variables it reads (same names as in the plugin).
PLUGIN_FILE = Path(__file__).resolve().parent.parent / "pytest_plugin.py"
TRACER_FILE = Path(__file__).resolve().parent.parent / "grounding" / "tracer.py"
MUTATE_PLUGIN = "changeloop_mutate"
MUTATE_FILE = Path(__file__).resolve().parent.parent / "pytest_mutate.py"
PACKAGES_ENV = "CHANGELOOP_PACKAGES"
IMPORTS_ENV = "CHANGELOOP_IMPORTS_DIR"
_INSTALL_DIRS = frozenset({"site-packages", "dist-packages"})


@dataclass(frozen=True)
class Injected:
    argv: tuple[str, ...]
    env: Mapping[str, str]
    imports_dir: Path | None  # where the plugin writes its import records, None if not injected


def pytest_position(argv: Sequence[str]) -> int | None:
    """Index right after the word that starts pytest in ``argv``, or None."""
    words = [a.rsplit("/", 1)[-1] for a in argv]
    for i, word in enumerate(words):
        if word in ("pytest", "py.test") and (i == 0 or words[i - 1] != "-p"):
            return i + 1
        if word == "-m" and i + 1 < len(words) and words[i + 1] in ("pytest", "py.test"):
            return i + 2
    return None


def _opted_out(argv: Sequence[str]) -> bool:
    return any(a in (f"no:{PLUGIN}", f"-pno:{PLUGIN}") for a in argv)


def _named(argv: Sequence[str]) -> bool:
    """The command already loads the plugin (``-p changeloop_claims``)."""
    return any(a in (PLUGIN, f"-p{PLUGIN}") for a in argv)


def inject(
    argv: Sequence[str], env: Mapping[str, str], run_dir: Path, packages: Mapping[str, str]
) -> Injected:
    """``argv``/``env`` with the plugin added when ``argv`` runs pytest directly."""
    at = pytest_position(argv)
    if at is None or _opted_out(argv):
        return Injected(tuple(argv), env, None)
    plugin_dir = run_dir / "pytest-plugin"
    imports_dir = run_dir / "imports"
    try:
        plugin_dir.mkdir(parents=True, exist_ok=True)
        imports_dir.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(PLUGIN_FILE, plugin_dir / f"{PLUGIN}.py")
        shutil.copyfile(TRACER_FILE, plugin_dir / "changeloop_grounding.py")  # grounding
    except OSError:
        return Injected(tuple(argv), env, None)
    path = env.get("PYTHONPATH", "")
    new_env = dict(env)
    new_env["PYTHONPATH"] = f"{plugin_dir}:{path}" if path else str(plugin_dir)
    new_env[PACKAGES_ENV] = ",".join(sorted(packages))
    new_env[IMPORTS_ENV] = str(imports_dir)
    new_argv = tuple(argv) if _named(argv) else (*argv[:at], "-p", PLUGIN, *argv[at:])
    return Injected(new_argv, new_env, imports_dir)


def inject_mutation(
    argv: Sequence[str], env: Mapping[str, str], run_dir: Path, packages: Mapping[str, str]
) -> Injected:
    """:func:`inject`, plus the mutation session plugin (``-p changeloop_mutate``)."""
    injected = inject(argv, env, run_dir, packages)
    at = pytest_position(injected.argv)
    if injected.imports_dir is None or at is None:
        return injected
    try:
        shutil.copyfile(MUTATE_FILE, run_dir / "pytest-plugin" / f"{MUTATE_PLUGIN}.py")
    except OSError:
        return Injected(tuple(argv), env, None)
    new_argv = (*injected.argv[:at], "-p", MUTATE_PLUGIN, *injected.argv[at:])
    return Injected(new_argv, injected.env, injected.imports_dir)


def records(imports_dir: Path) -> tuple[dict[str, list[str]], list[str]]:
    """(package → files it was imported from, interpreters) over every process's record."""
    try:
        files = sorted(imports_dir.glob("imports-*.json"))
    except OSError:
        return {}, []
    blobs: dict[str, bytes] = {}
    for file in files:
        try:
            blobs[file.name] = file.read_bytes()
        except OSError:
            continue
    return records_of(blobs)


def records_of(blobs: Mapping[str, bytes]) -> tuple[dict[str, list[str]], list[str]]:
    """:func:`records` over the record files' bytes (by file name), as an executor returns them."""
    packages: dict[str, list[str]] = {}
    executables: list[str] = []
    for name in sorted(blobs):
        if not (name.startswith("imports-") and name.endswith(".json")):
            continue
        try:
            doc = json.loads(blobs[name].decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            continue
        if not isinstance(doc, dict):
            continue
        exe = doc.get("executable")
        if isinstance(exe, str) and exe not in executables:
            executables.append(exe)
        found = doc.get("packages")
        for package, paths in found.items() if isinstance(found, dict) else ():
            for path in paths if isinstance(paths, list) else ():
                if isinstance(path, str) and path not in packages.setdefault(package, []):
                    packages[package].append(path)
    return packages, executables


def inside(path: str, roots: Sequence[Path]) -> bool:
    """Whether ``path`` is the repository's own code: under a root, not an installed copy."""
    resolved = Path(path).resolve()
    for root in roots:
        try:
            rel = resolved.relative_to(root.resolve())
        except ValueError:
            continue
        return not _INSTALL_DIRS.intersection(rel.parts)
    return False


def outside_imports(
    imports: Path | Mapping[str, bytes] | None,
    roots: Sequence[Path],
    packages: Mapping[str, str],
    shown: Path,
) -> dict[str, Finding]:
    """One ``imported-from-outside`` finding per package the tests imported from elsewhere.

    ``imports``: the plugin's record directory, or its files' bytes by name.
    ``roots`` are where the repository's code may live (the sandbox the tests
    ran in and the user's checkout); ``shown`` is the checkout named in the
    message as the package's own path.
    """
    if imports is None:
        return {}
    found, executables = records(imports) if isinstance(imports, Path) else records_of(imports)
    python = executables[0] if executables else "python"
    out: dict[str, Finding] = {}
    for name in sorted(packages):
        foreign = [p for p in found.get(name, []) if not inside(p, roots)]
        if not foreign:
            continue
        own = shown / packages[name]
        out[name] = Finding(
            kind="imported-from-outside",
            severity="error",
            file=foreign[0],
            message=(
                f"package '{name}' was imported from {foreign[0]}, outside the repository "
                f"(its own code is {own}): the tests ran an installed copy, not the content "
                f"this receipt binds to. Fix: install the project editable into that "
                f"interpreter: {shlex.quote(python)} -m pip install -e {shlex.quote(str(shown))}"
            ),
        )
    return out

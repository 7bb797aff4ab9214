"""Is the tool a provider's command starts installed where the command will look for it?

Example: ``npx vitest run`` in a repository without vitest in its node_modules is a
``tool-missing`` finding (npx would download it); ``node …`` in a repository whose
package.json declares dependencies but has no node_modules is
``dependencies-missing``. Reads the file system and PATH; runs nothing.
"""

from __future__ import annotations

import shutil

from changeloop.detect import javascript, python
from changeloop.detect.doctor.browsers import browsers_missing
from changeloop.detect.doctor.finding import DoctorFinding, cd_into
from changeloop.detect.doctor.node import manager_hint, needs_node_modules, node_install
from changeloop.detect.imports import runs_tests
from changeloop.fingerprints.environment import DERIVED_PYTHON
from changeloop.model import Provider, Repository

# what `npx <word>` runs → the npm package that must be installed for it
_NPM_TOOLS = {"playwright": "@playwright/test", "vitest": "vitest", "jest": "jest"}
# a command's first word that must be on PATH → (what to do, the command that does it)
_ON_PATH: dict[str, tuple[str, str | None]] = {
    "cargo": (
        "install the Rust toolchain (rustup) so cargo is on PATH",
        "curl --proto '=https' -sSf https://sh.rustup.rs | sh",
    ),
    "node": ("install Node.js 20 or newer", None),
}


def tool_findings(provider: Provider, repo: Repository) -> list[DoctorFinding]:
    """Every tool the command needs that is not installed, in the order a user installs them."""
    argv = provider.command or ()
    words = [a.rsplit("/", 1)[-1] for a in argv[:3]]
    out: list[DoctorFinding] = []
    missing = _npx_tool(provider, repo, words)
    if missing is not None:
        out.append(missing)
    missing = _venv_module(provider, repo)
    if missing is not None:
        out.append(missing)
    if words and words[0] in ("node", "npm") and needs_node_modules(repo.path):
        install = node_install(repo.path, "")
        out.append(
            DoctorFinding(
                "dependencies-missing",
                f"provider {provider.name} runs `{' '.join(argv[:3])}` but {repo.name} declares "
                "dependencies and has no node_modules (its build and tests import them)",
                f"install {repo.name}'s locked dependencies" + manager_hint(repo.path),
                _in_repo(repo, install),
                repository=repo.name,
            )
        )
    if (provider.adapter == "playwright" or "playwright" in words) and javascript.installed(
        repo.path, "@playwright/test"
    ):  # (not installed: the tool-missing finding comes first)
        missing = browsers_missing(provider, repo)
        if missing is not None:
            out.append(missing)
    out.extend(_not_on_path(provider, repo, words))
    return out


def _npx_tool(provider: Provider, repo: Repository, words: list[str]) -> DoctorFinding | None:
    """``npx <tool>`` whose package is not in the repository's node_modules."""
    if not (words and words[0] == "npx" and len(words) > 1 and words[1] in _NPM_TOOLS):
        return None
    package = _NPM_TOOLS[words[1]]
    if javascript.installed(repo.path, package):
        return None
    return DoctorFinding(
        "tool-missing",
        f"provider {provider.name} runs `npx {words[1]}` but {package} is not "
        f"installed in {repo.name}'s node_modules (npx would try to download it)",
        f"install {package} in {repo.name}" + manager_hint(repo.path),
        _in_repo(repo, node_install(repo.path, package)),
        repository=repo.name,
    )


def _venv_module(provider: Provider, repo: Repository) -> DoctorFinding | None:
    """``<venv python> -m ruff|mypy|pytest`` whose module the virtualenv lacks."""
    argv = provider.command or ()
    venv = python.venv_python(repo.path)
    if venv is None or argv[:2] not in ((venv, "-m"), (DERIVED_PYTHON, "-m")) or len(argv) <= 2:
        return None
    module = argv[2]
    # (pytest under a test command: the interpreter check says it, with the extra)
    tests = provider.adapter == "test-discovery" or runs_tests(argv)
    linters = ("ruff", "mypy") if tests else ("pytest", "ruff", "mypy")
    if module not in linters or python.venv_version(repo.path, module) is not None:
        return None
    return DoctorFinding(
        "tool-missing",
        f"provider {provider.name} runs `{venv} -m {module}` but {module} is not "
        f"installed in {repo.name}'s virtualenv",
        f"install {module} into {repo.name}'s virtualenv",
        f"{cd_into(repo)}{venv} -m pip install {module}",
        repository=repo.name,
    )


def _not_on_path(provider: Provider, repo: Repository, words: list[str]) -> list[DoctorFinding]:
    """cargo or node named by the command but absent from PATH."""
    first = words[0] if words else ""
    if first not in _ON_PATH or shutil.which(first) is not None:
        return []
    action, command = _ON_PATH[first]
    return [
        DoctorFinding(
            "tool-missing",
            f"provider {provider.name} runs {first} but no `{first}` is on PATH",
            action,
            command,
            repository=repo.name,
        )
    ]


def _in_repo(repo: Repository, command: str) -> str:
    """An install run in the repository, in a subshell so the user's shell stays where it is."""
    where = cd_into(repo)
    return f"({where}{command})" if where else command

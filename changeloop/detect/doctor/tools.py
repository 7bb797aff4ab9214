"""Is the tool a provider's command starts installed where the command will look for it?

Every check resolves where the derived command runs: a provider with ``workdir``
(a workspace member) finds its ``npx`` tools in that member's
``node_modules/.bin`` (or a folder above it, as npx does), never only at the
repository root.

Example: ``npx vitest run`` in a member without vitest in its node_modules is a
``tool-missing`` finding (npx would download it); so is ``npx mocha`` or any other
``npx <tool>``; ``node …`` in a repository whose package.json declares
dependencies but has no node_modules is ``dependencies-missing``; ``npm run
build`` whose script runs pnpm with no pnpm on PATH is ``tool-missing``. Reads the
file system and PATH; runs nothing.
"""

from __future__ import annotations

import shlex
import shutil
from pathlib import Path

from changeloop.detect import python
from changeloop.detect.doctor.browsers import browsers_missing, vitest_browser_config
from changeloop.detect.doctor.finding import DoctorFinding, cd_into
from changeloop.detect.doctor.node import (
    bin_installed,
    manager_hint,
    needs_node_modules,
    node_install,
    package_manager,
    script_managers,
)
from changeloop.detect.imports import runs_tests
from changeloop.fingerprints.environment import DERIVED_PYTHON
from changeloop.model import Provider, Repository
from changeloop.text import repository_words

# what `npx <word>` runs → the npm package that provides it
_NPM_TOOLS = {
    "playwright": "@playwright/test",
    "vitest": "vitest",
    "jest": "jest",
    "mocha": "mocha",
}
# a command's first word that must be on PATH → (what to do, the command that does it)
_ON_PATH: dict[str, tuple[str, str | None]] = {
    "cargo": (
        "install the Rust toolchain (rustup) so cargo is on PATH",
        "curl --proto '=https' -sSf https://sh.rustup.rs | sh",
    ),
    "node": ("install Node.js 20 or newer", None),
}


def workdir_of(provider: Provider, repo: Repository) -> Path:
    """Where the provider's command runs: its ``workdir`` in the repository, else the root."""
    return repo.path / provider.workdir if provider.workdir else repo.path


def tool_findings(provider: Provider, repo: Repository) -> list[DoctorFinding]:
    """Every tool the command needs that is not installed, in the order a user installs them."""
    argv = provider.command or ()
    words = [a.rsplit("/", 1)[-1] for a in argv[:3]]
    where = workdir_of(provider, repo)
    out: list[DoctorFinding] = []
    missing = _npx_tool(provider, repo, words, where)
    if missing is not None:
        out.append(missing)
    missing = _venv_module(provider, repo)
    if missing is not None:
        out.append(missing)
    if words and words[0] in ("node", "npm") and needs_node_modules(where, repo.path):
        install = node_install(repo.path, "")
        out.append(
            DoctorFinding(
                "dependencies-missing",
                f"provider {provider.name} runs `{shlex.join(argv[:3])}` but "
                f"{repository_words(repo.name)} declares dependencies and has no node_modules "
                "(its build and tests import them)",
                f"install the locked dependencies of {repository_words(repo.name)}"
                + manager_hint(repo.path),
                _in_repo(repo, install),
                repository=repo.name,
            )
        )
    out.extend(_script_managers(provider, repo, words, where))
    playwright = provider.adapter == "playwright" or "playwright" in words
    if playwright and bin_installed(where, "playwright", "@playwright/test"):
        # (not installed: the tool-missing finding comes first)
        missing = browsers_missing(provider, repo)
        if missing is not None:
            out.append(missing)
    elif "vitest" in words and bin_installed(where, "vitest", "vitest"):
        config = vitest_browser_config(where, argv)
        if config is not None:
            missing = browsers_missing(provider, repo, vitest=config)
            if missing is not None:
                out.append(missing)
    out.extend(_not_on_path(provider, repo, words))
    return out


def _npx_tool(
    provider: Provider, repo: Repository, words: list[str], where: Path
) -> DoctorFinding | None:
    """``npx <tool>`` whose binary is not in node_modules/.bin where the command runs."""
    argv = provider.command or ()
    if not (words and words[0] == "npx"):
        return None
    tool = next((a for a in argv[1:] if not a.startswith("-")), None)
    if tool is None or any(a in ("-p", "--package") or a.startswith("--package=") for a in argv):
        return None  # `npx -p pkg cmd` names its own package: npx fetches it on purpose
    package = _NPM_TOOLS.get(tool, tool)
    if bin_installed(where, tool, package):
        return None
    at = f" ({provider.workdir})" if provider.workdir else ""
    return DoctorFinding(
        "tool-missing",
        f"provider {provider.name} runs `npx {tool}` but {package} is not installed in "
        f"the node_modules of {repository_words(repo.name)}{at} (npx would try to "
        "download it)",
        f"install {package} in {repository_words(repo.name)}" + manager_hint(repo.path),
        _in_repo(repo, node_install(repo.path, package)),
        repository=repo.name,
    )


def _script_managers(
    provider: Provider, repo: Repository, words: list[str], where: Path
) -> list[DoctorFinding]:
    """``npm run X`` whose script calls pnpm/yarn/bun, and that manager not on PATH."""
    argv = provider.command or ()
    if words[:2] != ["npm", "run"] or len(argv) < 3:
        return []
    out = []
    for tool in script_managers(where, argv[2]):
        if shutil.which(tool) is not None:
            continue
        pinned = package_manager(repo.path, tool)
        out.append(
            DoctorFinding(
                "tool-missing",
                f"provider {provider.name} runs `npm run {argv[2]}`, whose script runs "
                f"{tool}, and no `{tool}` is on PATH",
                f"install {pinned} for good (`corepack enable {tool}` does it too, where "
                "Node's own folder is writable)",
                f"npm i -g {shlex.quote(pinned)}",
                repository=repo.name,
            )
        )
    return out


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
        f"installed in the virtualenv of {repository_words(repo.name)}",
        f"install {module} into that virtualenv ({venv})",
        f"{cd_into(repo)}{shlex.quote(str(venv))} -m pip install {shlex.quote(module)}",
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

"""Can the interpreter a test command runs import the runner and the project's own code?

Asks only the command's interpreter (``pyenv.check``, ``imports.outside_packages``:
``find_spec``, isolated and from outside the repository; never an import of
project code). Either gap means ``prove`` would discover no tests, or test an
installed copy instead of the content a receipt binds to.

Every fix targets the repository's own virtualenv (made when missing), never an
interpreter outside the repository: the machine's own Python is used by other
programs, and an install there would replace what they import. When the install
doctor printed was run and failed, the finding says why (pip's log of it) — a
program the build needs, installed first — and never prints the same failing
line again.
"""

from __future__ import annotations

import shlex

from changeloop.detect import build_tools, pyenv
from changeloop.detect.doctor.finding import DoctorFinding, cd_into
from changeloop.detect.imports import outside_packages
from changeloop.fingerprints.environment import venv_python
from changeloop.model import Provider, Repository
from changeloop.text import repository_words


def interpreter_findings(provider: Provider, repo: Repository) -> list[DoctorFinding]:
    """The runner or the project missing; else the packages imported from elsewhere."""
    gap = pyenv.check(repo.path, provider.command or ())
    if gap is not None:
        return [env_finding(provider, repo, gap)]
    return import_findings(provider, repo)


def _venv_words(repo: Repository, interpreter: str | None) -> str:
    """The virtualenv a fix installs into, with its interpreter's path spelled out."""
    venv = pyenv.own_interpreter(repo.path, interpreter) or venv_python(repo.path)
    if venv is not None:
        return f"the virtualenv of {repository_words(repo.name)} (interpreter {venv})"
    made = repo.path / ".venv" / "bin" / "python"
    return f"a new virtualenv of {repository_words(repo.name)} (interpreter {made})"


def _outside_note(repo: Repository, written: str | None) -> str:
    """What to change when the command itself names an interpreter outside the repository."""
    if written is None or pyenv.own_interpreter(repo.path, written) is not None:
        return ""
    return (
        f"; the provider's command names `{written}`, an interpreter outside "
        f"{repository_words(repo.name)}: remove the provider (derived wiring runs the "
        "repository's virtualenv) or name the virtualenv's interpreter in its command"
    )


def env_finding(provider: Provider, repo: Repository, gap: pyenv.EnvGap) -> DoctorFinding:
    """The interpreter cannot import the runner or the project: prove would discover 0."""
    lacks = [f"the runner ({gap.runner})"] if gap.runner else []
    if gap.missing:
        shown = ", ".join(gap.missing[:6]) + (" …" if len(gap.missing) > 6 else "")
        lacks.append(f"the project or its test dependencies ({shown})")
    argv = provider.command or ()
    written = None if not argv or argv[0] == "python" else argv[0]
    message = (
        f"provider {provider.name} runs `{shlex.join(argv[:3])}` with {gap.interpreter}, "
        f"which cannot import {' and '.join(lacks)}: prove would discover no tests"
    )
    action = (
        f"install {repository_words(repo.name)} and its test dependencies into "
        f"{_venv_words(repo, written)} (derived `python` runs it when the provider runs)"
        + _outside_note(repo, written)
    )
    command: str | None = f"{cd_into(repo)}{gap.fix}"
    failure = gap.failure
    if failure is not None:
        message += f". The last install failed: {failure.line} (pip's log: {failure.log})"
        install = build_tools.install_for(repo.path, failure.tool) if failure.tool else None
        if failure.tool is not None and install is not None:
            action = (
                f"the build of {repository_words(repo.name)} runs `{failure.tool}`, which is "
                f"not on PATH: install it, then install again"
            )
            first = f"{install} && "
            command = f"{cd_into(repo)}{first if first not in gap.fix else ''}{gap.fix}"
        elif failure.tool is not None:
            action = (
                f"the build of {repository_words(repo.name)} runs `{failure.tool}`, which is "
                f"not on PATH: install {failure.tool}, then run again: {command}"
            )
            command = None
        else:
            action = f"read why in {failure.log}, fix it, then run again: {command}"
            command = None  # the same line would fail the same way
    return DoctorFinding(
        "tool-missing" if gap.runner or (failure and failure.tool) else "dependencies-missing",
        message,
        action,
        command,
        repository=repo.name,
    )


def import_findings(provider: Provider, repo: Repository) -> list[DoctorFinding]:
    """The project's packages the command's interpreter would import from an installed copy."""
    out: list[DoctorFinding] = []
    argv = provider.command or ()
    written = None if not argv or argv[0] == "python" else argv[0]
    for found in outside_packages(repo.path, argv):
        out.append(
            DoctorFinding(
                "imported-from-outside",
                f"provider {provider.name}: `{found.interpreter}` imports package "
                f"'{found.name}' from {found.origin}, outside {repository_words(repo.name)} "
                f"(its own code is {repo.path / found.own}): the tests would run an installed "
                "copy, not the content a receipt binds to",
                f"install {repository_words(repo.name)} editable into "
                f"{_venv_words(repo, written)}, never into an interpreter outside it"
                + _outside_note(repo, written),
                f"{cd_into(repo)}{pyenv.install_command(repo.path, written)}",
                repository=repo.name,
            )
        )
    return out

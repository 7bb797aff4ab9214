"""Can the interpreter a test command runs import the runner and the project's own code?

Asks only the command's interpreter (``pyenv.check``, ``imports.outside_packages``:
``find_spec``, never an import of project code). Either gap means ``prove`` would
discover no tests, or test an installed copy instead of the content a receipt binds to.
"""

from __future__ import annotations

import shlex

from changeloop.detect import pyenv
from changeloop.detect.doctor.finding import DoctorFinding, cd_into
from changeloop.detect.imports import outside_packages
from changeloop.model import Provider, Repository


def interpreter_findings(provider: Provider, repo: Repository) -> list[DoctorFinding]:
    """The runner or the project missing; else the packages imported from elsewhere."""
    gap = pyenv.check(repo.path, provider.command or ())
    if gap is not None:
        return [env_finding(provider, repo, gap)]
    return import_findings(provider, repo)


def env_finding(provider: Provider, repo: Repository, gap: pyenv.EnvGap) -> DoctorFinding:
    """The interpreter cannot import the runner or the project: prove would discover 0."""
    lacks = [f"the runner ({gap.runner})"] if gap.runner else []
    if gap.missing:
        shown = ", ".join(gap.missing[:6]) + (" …" if len(gap.missing) > 6 else "")
        lacks.append(f"the project or its test dependencies ({shown})")
    return DoctorFinding(
        "tool-missing" if gap.runner else "dependencies-missing",
        f"provider {provider.name} runs `{' '.join((provider.command or ())[:3])}` with "
        f"{gap.interpreter}, which cannot import {' and '.join(lacks)}: prove would "
        "discover no tests",
        f"install {repo.name} and its test dependencies into a virtualenv in the repository "
        "(derived `python` runs the repository's .venv when the provider runs)",
        f"{cd_into(repo)}{gap.fix}",
        repository=repo.name,
    )


def import_findings(provider: Provider, repo: Repository) -> list[DoctorFinding]:
    """The project's packages the command's interpreter would import from an installed copy."""
    out: list[DoctorFinding] = []
    for found in outside_packages(repo.path, provider.command or ()):
        python = shlex.quote(found.interpreter)
        out.append(
            DoctorFinding(
                "imported-from-outside",
                f"provider {provider.name}: `{found.interpreter}` imports package "
                f"'{found.name}' from {found.origin}, outside {repo.name} (its own code is "
                f"{repo.path / found.own}): the tests would run an installed copy, not the "
                "content a receipt binds to",
                f"install {repo.name} editable into that interpreter (or run the tests with "
                "the project's own virtualenv)",
                f"{cd_into(repo)}{python} -m pip install -e .",
                repository=repo.name,
            )
        )
    return out

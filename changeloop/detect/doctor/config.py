"""A framework configuration the derived command would not honour (``config-not-honoured``).

Example: ``addopts = --junitxml=out.xml`` in pytest.ini overrides the report the
derived ``test`` provider reads; a vitest config's ``reporters`` is replaced by
the derived ``--reporter=json``. Only derived providers are checked: a provider
wired by hand says what it reads.
"""

from __future__ import annotations

import re

from changeloop.detect import javascript, python
from changeloop.detect.doctor.finding import DoctorFinding, edit_command
from changeloop.model import Provider, Repository
from changeloop.project.manifests import head, read_ini, read_toml

_JUNIT_OPT = re.compile(r"--junit-?xml|-p\s*no:junitxml")


def config_findings(provider: Provider, repo: Repository, cdir: str) -> list[DoctorFinding]:
    """A declared framework configuration the derived command would not honour."""
    argv = provider.command or ()
    out: list[DoctorFinding] = []
    edit = edit_command(cdir, "execution.yaml")
    if "pytest" in argv:
        for where, addopts in pytest_addopts(repo):
            if _JUNIT_OPT.search(addopts):
                out.append(
                    DoctorFinding(
                        "config-not-honoured",
                        f"{where} addopts ({addopts.strip()}) overrides the --junitxml report the "
                        f"derived provider {provider.name} reads",
                        "remove the junitxml option from addopts, or wire the provider by hand "
                        "with the report path your configuration writes",
                        edit,
                        repository=repo.name,
                    )
                )
    if "vitest" in argv:
        for stem in javascript.CONFIG_FILES["vitest"]:
            for ext in javascript.CONFIG_EXTS:
                path = repo.path / f"{stem}{ext}"
                if path.is_file() and re.search(r"\breporters?\s*:", head(path)):
                    out.append(
                        DoctorFinding(
                            "config-not-honoured",
                            f"{path.name} sets custom reporters; the derived provider "
                            f"{provider.name} passes --reporter=json and would replace them",
                            "wire the provider by hand with the reporter and report your config "
                            "writes (execution.yaml)",
                            edit,
                            repository=repo.name,
                        )
                    )
    return out


def pytest_addopts(repo: Repository) -> list[tuple[str, str]]:
    """(where, addopts) of every pytest configuration file of the repository that sets it."""
    found: list[tuple[str, str]] = []
    addopts = python.pytest_settings(read_toml(repo.path / "pyproject.toml")).get("addopts")
    if isinstance(addopts, list):
        addopts = " ".join(str(a) for a in addopts)
    if isinstance(addopts, str):
        found.append(("pyproject.toml [tool.pytest.ini_options]", addopts))
    for name, section in (
        ("pytest.ini", "pytest"),
        ("tox.ini", "pytest"),
        ("setup.cfg", "tool:pytest"),
    ):
        ini = read_ini(repo.path / name)
        if ini is not None and ini.has_option(section, "addopts"):
            found.append((f"{name} [{section}]", ini.get(section, "addopts")))
    return found

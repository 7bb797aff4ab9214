"""A framework configuration the derived command would not honour (``config-not-honoured``).

Example: ``addopts = --junitxml=out.xml`` in pytest.ini overrides the report the
derived ``test`` provider reads; a vitest config's ``reporters`` is replaced by
the derived ``--reporter=json``. Only derived providers are checked: a provider
wired by hand says what it reads.
"""

from __future__ import annotations

import re

from changeloop.detect import javascript, python
from changeloop.detect.doctor.finding import DoctorFinding, FileEdit, change_file
from changeloop.model import Provider, Repository
from changeloop.project.manifests import head, read_ini, read_toml

_JUNIT_OPT = re.compile(r"--junit-?xml|-p\s*no:junitxml")


def config_findings(provider: Provider, repo: Repository, cdir: str) -> list[DoctorFinding]:
    """A declared framework configuration the derived command would not honour."""
    argv = provider.command or ()
    out: list[DoctorFinding] = []
    path = change_file(cdir, "execution.yaml")
    if "pytest" in argv:
        for where, addopts in pytest_addopts(repo):
            found = _JUNIT_OPT.search(addopts)
            if found:
                written = _junit_path(addopts)
                out.append(
                    DoctorFinding(
                        "config-not-honoured",
                        f"{where} addopts ({addopts.strip()}) overrides the --junitxml report the "
                        f"derived provider {provider.name} reads",
                        "wire the provider by hand with the report your configuration writes "
                        "(the text below), or remove the junitxml option from addopts",
                        None,
                        repository=repo.name,
                        edit=FileEdit(
                            path,
                            f"providers:\n  {provider.name}:\n    adapter: test-discovery\n"
                            f"    command: [python3, -m, pytest]\n"
                            f"    report: {written or '<the file addopts names>'}\n",
                        ),
                    )
                )
    if "vitest" in argv:
        for stem in javascript.CONFIG_FILES["vitest"]:
            for ext in javascript.CONFIG_EXTS:
                config = repo.path / f"{stem}{ext}"
                if config.is_file() and re.search(r"\breporters?\s*:", head(config)):
                    out.append(
                        DoctorFinding(
                            "config-not-honoured",
                            f"{config.name} sets custom reporters; the derived provider "
                            f"{provider.name} passes --reporter=json and would replace them",
                            "wire the provider by hand with the reporter and report your config "
                            "writes (the text below, with that report's path)",
                            None,
                            repository=repo.name,
                            edit=FileEdit(
                                path,
                                f"providers:\n  {provider.name}:\n    adapter: test-discovery\n"
                                "    command: [npx, vitest, run]\n"
                                "    report: <the JSON or JUnit file your reporters write>\n",
                            ),
                        )
                    )
    return out


def _junit_path(addopts: str) -> str | None:
    """The file ``--junitxml=<file>`` (or ``--junit-xml <file>``) names in addopts."""
    found = re.search(r"--junit-?xml[= ]\s*(\S+)", addopts)
    return found.group(1) if found else None


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

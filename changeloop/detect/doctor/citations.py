"""Claims no test cites (``claim-not-cited``) and a pytest marker a plain pytest refuses.

Example::

    citation_findings(ctx, providers)
    # [DoctorFinding("claim-not-cited", "no test cites claim greeting …",
    #   'cite it from the test that proves it: @pytest.mark.claim("greeting") above …',
    #   "${EDITOR:-vi} tests/test_greet.py", repository="self", capability="test")]

A passing suite credits only the claims its tests cite (or its provider lists),
so a claim nothing cites can never be proven: doctor says so before a run, with
the snippet for the framework the provider runs (``changeloop.citing``). Files
are read as text, never run: a citation is ``[claim:id]`` anywhere, a pytest
``mark.claim("id")``, a Playwright annotation ``{type: "claim", description:
"id"}``, or a ``claim: "id"`` field (vitest ``meta``).

pytest rejects a marker it does not know under ``--strict-markers`` (and warns,
an error under ``filterwarnings = error``): changeloop's plugin registers
``claim`` for its own runs, but the project's plain ``pytest`` needs it in its
configuration. ``claim-marker-unregistered`` shows the lines to add (a warning:
changeloop never edits the project's configuration, and its own runs are fine).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from changeloop.citing import MARKER_LINE, framework_of, how_to_cite
from changeloop.detect import python
from changeloop.detect.doctor.finding import DoctorFinding
from changeloop.detect.types import ChangeContext
from changeloop.model import Provider, Repository
from changeloop.project.manifests import head, read_ini, read_toml, walk_files

SOURCES = (".py", ".js", ".mjs", ".cjs", ".ts", ".mts", ".cts", ".jsx", ".tsx", ".rs")
CITING_ADAPTERS = frozenset({"test-discovery", "playwright", "mutation", "command"})
_ID = r"([A-Za-z0-9][A-Za-z0-9._/-]*)"
_TAG = re.compile(r"\[claim:" + _ID + r"\]")
_MARK = re.compile(r"mark\.claim\(([^)]*)\)")
_QUOTED = re.compile(r"""["']([A-Za-z0-9][A-Za-z0-9._/-]*)["']""")
_ANNOTATION = re.compile(
    r"""type\s*:\s*["']claim["']\s*,\s*description\s*:\s*["']""" + _ID + r"""["']"""
    r"""|description\s*:\s*["']""" + _ID + r"""["']\s*,\s*type\s*:\s*["']claim["']"""
)
_FIELD = re.compile(r"""\bclaims?\s*:\s*["']""" + _ID + r"""["']""")
_REGISTERED = re.compile(r"""(^|[\s"',\[])claim\s*(\(|:)""", re.MULTILINE)
_TEST_FILE = re.compile(r"(^|/)(test_[^/]*\.py|[^/]*_test\.py|[^/]*\.(test|spec)\.[mc]?[jt]sx?)$")


@dataclass(frozen=True)
class Cited:
    """What a repository's files cite, and a test file to open for a new citation."""

    ids: frozenset[str]
    test_file: Path | None


def cited_in(repo: Path) -> Cited:
    """Every claim id the repository's source files cite (read as text)."""
    ids: set[str] = set()
    first_test: Path | None = None
    for path in walk_files(repo, SOURCES):
        text = head(path, 256 * 1024)
        if first_test is None and _TEST_FILE.search(path.relative_to(repo).as_posix()):
            first_test = path
        if "claim" not in text:
            continue
        ids.update(_TAG.findall(text))
        for args in _MARK.findall(text):
            ids.update(_QUOTED.findall(args))
        for a, b in _ANNOTATION.findall(text):
            ids.add(a or b)
        ids.update(_FIELD.findall(text))
    return Cited(frozenset(ids), first_test)


def citation_findings(
    ctx: ChangeContext, providers: Mapping[str, Provider], cdir: str
) -> list[DoctorFinding]:
    """One ``claim-not-cited`` per claim and capability no provider can credit."""
    scans: dict[Path, Cited] = {}
    findings: list[DoctorFinding] = []
    pytest_repos: dict[str, Repository] = {}
    for cid, claim in sorted(ctx.evidence.claims.items()):
        for capability in claim.requires:
            mine = [
                p
                for p in providers.values()
                if capability in _capabilities(p)
                and (claim.repository is None or p.repository in (None, claim.repository))
            ]
            if not mine or any(p.adapter not in CITING_ADAPTERS for p in mine):
                continue  # nothing provides it (missing-adapter says so), or others credit it
            if any(cid in p.claims for p in mine):
                continue
            if any(p.adapter == "command" and p.envelope for p in mine):
                continue  # a custom runner's envelope cites what it checked: only a run can tell
            uncited = []
            for p in mine:
                repo = _repo_of(ctx, p)
                if repo is None:
                    continue
                cited = scans.setdefault(repo.path, cited_in(repo.path))
                framework = framework_of(p.adapter, p.command or (), p.format)
                if framework == "pytest":
                    pytest_repos[repo.name] = repo
                if p.adapter == "command" or cid not in cited.ids:
                    uncited.append((p, repo, framework, cited))
            if len(uncited) < len(mine):
                continue  # some provider's tests cite it
            p, repo, framework, cited = uncited[0]
            findings.append(_not_cited(cid, capability, p, repo, framework, cited, cdir))
    for repo in pytest_repos.values():
        found = marker_finding(repo)
        if found is not None:
            findings.append(found)
    return findings


def _capabilities(provider: Provider) -> tuple[str, ...]:
    outputs = tuple(provider.outputs or ())
    return (provider.capability, *outputs)


def _repo_of(ctx: ChangeContext, provider: Provider) -> Repository | None:
    if provider.repository is not None:
        return ctx.repositories.get(provider.repository)
    return next(iter(ctx.repositories.values())) if len(ctx.repositories) == 1 else None


def _not_cited(  # noqa: PLR0917 (one caller)
    cid: str,
    capability: str,
    provider: Provider,
    repo: Repository,
    framework: str,
    cited: Cited,
    cdir: str,
) -> DoctorFinding:
    listing = provider.adapter == "command" or framework in ("listing", "cargo")
    action = how_to_cite("listing" if provider.adapter == "command" else framework, cid)
    if framework == "pytest":
        registration = marker_registration(repo)
        if registration is not None and marker_finding(repo) is not None:
            action += "; register the marker too (claim-marker-unregistered)"
        elif registration is not None:
            where, text = registration
            action += f"; so a plain `pytest` accepts the marker, register it in {where}:\n{text}"
    if listing or cited.test_file is None:
        command = f"${{EDITOR:-vi}} {cdir}/execution.yaml" if listing else None
    else:
        rel = cited.test_file.relative_to(repo.path).as_posix()
        shown = rel if repo.relpath in ("", ".") else f"{repo.relpath}/{rel}"
        command = f"${{EDITOR:-vi}} {shown}"
    return DoctorFinding(
        "claim-not-cited",
        f"no test cites claim {cid} ({capability} by provider {provider.name}): a passing run "
        "would leave it inconclusive",
        action,
        command,
        repository=repo.name,
        capability=capability,
    )


# -- pytest's marker registration ---------------------------------------------------------


def _pytest_config(repo: Repository) -> tuple[str, str, Mapping[str, object]] | None:
    """(file, kind, settings) of the configuration pytest reads first, as pytest finds it."""
    ini = read_ini(repo.path / "pytest.ini")
    if ini is not None and ini.has_section("pytest"):
        return "pytest.ini", "ini", dict(ini.items("pytest"))
    pyproject = read_toml(repo.path / "pyproject.toml")
    settings = python.pytest_settings(pyproject)
    table = (pyproject or {}).get("tool", {}).get("pytest") if pyproject else None
    if isinstance(table, dict):
        kind = "toml-ini" if isinstance(table.get("ini_options"), dict) else "toml"
        return "pyproject.toml", kind, settings
    for name, section in (("tox.ini", "pytest"), ("setup.cfg", "tool:pytest")):
        cfg = read_ini(repo.path / name)
        if cfg is not None and cfg.has_section(section):
            return name, f"ini:{section}", dict(cfg.items(section))
    return None


def _registered(repo: Repository, settings: Mapping[str, object]) -> bool:
    markers = settings.get("markers")
    text = "\n".join(str(m) for m in markers) if isinstance(markers, list) else str(markers or "")
    if _REGISTERED.search(text):
        return True
    conftests: Iterable[Path] = (
        p for p in walk_files(repo.path, (".py",)) if p.name == "conftest.py"
    )
    return any(
        re.search(r"addinivalue_line\(\s*[\"']markers[\"']\s*,\s*[\"']claim", head(p))
        for p in conftests
    )


def marker_registration(repo: Repository) -> tuple[str, str] | None:
    """(file, the lines to add) when the project's pytest does not know ``claim``; else None."""
    found = _pytest_config(repo)
    if found is None:
        return "pyproject.toml", f'[tool.pytest.ini_options]\nmarkers = ["{MARKER_LINE}"]'
    where, kind, settings = found
    if _registered(repo, settings):
        return None
    if kind == "toml-ini":
        return where, f'[tool.pytest.ini_options]\nmarkers = ["{MARKER_LINE}"]'
    if kind == "toml":
        return where, f'[tool.pytest]\nmarkers = ["{MARKER_LINE}"]'
    section = kind.partition(":")[2] or "pytest"
    return where, f"[{section}]\nmarkers =\n    {MARKER_LINE}"


def _strict(settings: Mapping[str, object]) -> bool:
    addopts = settings.get("addopts")
    text = " ".join(map(str, addopts)) if isinstance(addopts, list) else str(addopts or "")
    flags = str(settings.get("strict_markers", "")) + str(settings.get("strict", ""))
    warnings = settings.get("filterwarnings")
    errors = "error" in (
        " ".join(map(str, warnings)) if isinstance(warnings, list) else str(warnings or "")
    )
    return (
        "--strict-markers" in text
        or "--strict" in text.split()
        or "true" in flags.lower()
        or (errors)
    )


def marker_finding(repo: Repository) -> DoctorFinding | None:
    """``claim-marker-unregistered`` where the project's own pytest would refuse the marker."""
    found = _pytest_config(repo)
    registration = marker_registration(repo)
    if found is None or registration is None or not _strict(found[2]):
        return None
    where, text = registration
    return DoctorFinding(
        "claim-marker-unregistered",
        f"{repo.name}'s pytest runs with --strict-markers (or turns warnings into errors) and "
        "does not register the `claim` marker: changeloop's runs register it, but a plain "
        "`pytest` there would refuse a test that cites a claim",
        f"register it in {where} (changeloop never edits your configuration):\n{text}",
        f"${{EDITOR:-vi}} {where if repo.relpath in ('', '.') else f'{repo.relpath}/{where}'}",
        severity="warning",
        repository=repo.name,
    )

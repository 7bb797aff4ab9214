"""``evidence doctor``: explain everything that would keep a change from being proven.

Findings share one shape ``{kind, message, suggested_action, playbook_command}``
(plus ``severity``, ``repository``, ``capability`` where they apply). Only
``severity: error`` findings count as unresolved; ``no-tests-declared`` is
informational (DESIGN.md §6). Doctor reads files and checks PATH; the only thing it
runs is a test command's own interpreter (never a script of the repository's),
asking ``find_spec`` where the project's packages would come from — no project code
is imported (``detect/imports.py``).
"""

from __future__ import annotations

import re
import shlex
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from changeloop import contracts, quality
from changeloop.detect import ChangeContext, javascript, pyenv, python
from changeloop.detect.coverage import effective, test_capabilities_declared, unresolved
from changeloop.detect.derive import required
from changeloop.detect.imports import outside_packages, runs_tests
from changeloop.detect.manifests import head, read_ini, read_toml
from changeloop.detect.playbook import change_dir, init_command, suggest
from changeloop.environment import DERIVED_PYTHON
from changeloop.model import Provider, Repository


@dataclass(frozen=True)
class DoctorFinding:
    kind: str
    message: str
    suggested_action: str
    playbook_command: str | None
    severity: str = "error"  # "error" counts as unresolved; "info" does not
    repository: str | None = None
    capability: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "kind": self.kind,
            "message": self.message,
            "suggested_action": self.suggested_action,
            "playbook_command": self.playbook_command,
            "severity": self.severity,
        }
        if self.repository is not None:
            out["repository"] = self.repository
        if self.capability is not None:
            out["capability"] = self.capability
        return out


def diagnose(ctx: ChangeContext, derived: Mapping[str, Provider]) -> list[DoctorFinding]:
    """Every finding for the change, missing adapters first."""
    configured = dict(ctx.execution.providers) if ctx.execution else {}
    providers = effective(configured, derived)
    needs = required(ctx.evidence, ctx.repositories)
    cdir = change_dir(ctx.root, ctx.change.path)
    findings: list[DoctorFinding] = []
    for capability, repo_name in unresolved(needs, ctx.repositories, providers.values()):
        repo = ctx.repositories.get(repo_name)
        if repo is None:
            continue  # an unknown repository name is a config error reported by the loader
        action, command = suggest(capability, repo, ctx.change.id, cdir)
        findings.append(
            DoctorFinding(
                "missing-adapter",
                f"'{capability}' is required in repository {repo_name} but no provider "
                "(configured or derived) produces it",
                action,
                command,
                repository=repo_name,
                capability=capability,
            )
        )
    if not test_capabilities_declared(ctx.evidence):
        findings.append(
            DoctorFinding(
                "no-tests-declared",
                "the change requires no test capability (test, discovery, browser); "
                "nothing here will run a test suite",
                "add `requires: [test]` to evidence.yaml if tests should prove this change",
                f"${{EDITOR:-vi}} {cdir}/evidence.yaml",
                severity="info",
            )
        )
    for provider in providers.values():
        findings.extend(_provider_findings(ctx, provider, cdir))
    findings = _unique(findings)
    findings.extend(quality.doctor_findings(ctx))  # changeloop/quality.py
    findings.extend(contracts.doctor_findings(ctx))  # changeloop/contracts/ (tool drift)
    return findings


def _unique(findings: list[DoctorFinding]) -> list[DoctorFinding]:
    """One finding per (kind, repository, command): two providers of a repository
    needing the same install say it once."""
    seen: set[tuple[str, str | None, str | None]] = set()
    out = []
    for f in findings:
        key = (f.kind, f.repository, f.playbook_command)
        if f.playbook_command is not None and key in seen:
            continue
        seen.add(key)
        out.append(f)
    return out


def _repo_of(ctx: ChangeContext, provider: Provider) -> Repository | None:
    if provider.repository is not None:
        return ctx.repositories.get(provider.repository)
    return next(iter(ctx.repositories.values())) if len(ctx.repositories) == 1 else None


def _provider_findings(ctx: ChangeContext, provider: Provider, cdir: str) -> list[DoctorFinding]:
    out: list[DoctorFinding] = []
    edit = f"${{EDITOR:-vi}} {cdir}/execution.yaml"
    if provider.adapter == "contract-digest" and len(provider.contract) < 2:
        out.append(
            DoctorFinding(
                "contract-paths-missing",
                f"provider {provider.name} (contract-digest) names {len(provider.contract)} "
                "contract path(s); it needs one in each of two or more repositories",
                "add `contract: {<repo>: <path>, <other-repo>: <path>}` to the provider",
                edit,
            )
        )
    if provider.adapter == "external" and not provider.trusted_keys:
        out.append(
            DoctorFinding(
                "external-key-missing",
                f"provider {provider.name} (external) names no public key, so no receipt "
                "could ever be accepted",
                "add `ci: {issuer: <name>, publicKey: <PEM>}` with the signer's public key",
                f"changeloop keygen --out ci-keys && {edit}",
            )
        )
    repo = _repo_of(ctx, provider)
    if repo is None or not provider.command:
        return out
    out.extend(_tool_findings(ctx, provider, repo))
    if provider.adapter == "test-discovery" or runs_tests(provider.command or ()):
        gap = pyenv.check(repo.path, provider.command)
        if gap is not None:
            out.append(_env_finding(provider, repo, gap))
        else:
            out.extend(_import_findings(provider, repo))
    if provider.origin == "derived":
        out.extend(_config_findings(provider, repo, cdir))
    return out


def _tool_findings(ctx: ChangeContext, provider: Provider, repo: Repository) -> list[DoctorFinding]:  # noqa: ARG001 (one signature for every check)
    argv = provider.command or ()
    words = [a.rsplit("/", 1)[-1] for a in argv[:3]]
    out: list[DoctorFinding] = []
    npm_tools = {"playwright": "@playwright/test", "vitest": "vitest", "jest": "jest"}
    if words and words[0] == "npx" and len(words) > 1 and words[1] in npm_tools:
        package = npm_tools[words[1]]
        if not javascript.installed(repo.path, package):
            install = _node_install(repo.path, package)
            where = "" if repo.relpath in (".", "") else f"cd {repo.relpath} && "
            out.append(
                DoctorFinding(
                    "tool-missing",
                    f"provider {provider.name} runs `npx {words[1]}` but {package} is not "
                    f"installed in {repo.name}'s node_modules (npx would try to download it)",
                    f"install {package} in {repo.name}" + _manager_hint(repo.path),
                    f"({where}{install})" if where else install,
                    repository=repo.name,
                )
            )
    venv = python.venv_python(repo.path)
    if venv is not None and argv[:2] in ((venv, "-m"), (DERIVED_PYTHON, "-m")) and len(argv) > 2:
        module = argv[2]
        # (pytest under a test command: the interpreter check below says it, with the extra)
        tests = provider.adapter == "test-discovery" or runs_tests(argv)
        linters = ("ruff", "mypy") if tests else ("pytest", "ruff", "mypy")
        if module in linters and python.venv_version(repo.path, module) is None:
            where = "" if repo.relpath in (".", "") else f"cd {repo.relpath} && "
            out.append(
                DoctorFinding(
                    "tool-missing",
                    f"provider {provider.name} runs `{venv} -m {module}` but {module} is not "
                    f"installed in {repo.name}'s virtualenv",
                    f"install {module} into {repo.name}'s virtualenv",
                    f"{where}{venv} -m pip install {module}",
                    repository=repo.name,
                )
            )
    if words and words[0] in ("node", "npm") and _needs_node_modules(repo.path):
        where = "" if repo.relpath in (".", "") else f"cd {repo.relpath} && "
        install = _node_install(repo.path, "")
        out.append(
            DoctorFinding(
                "dependencies-missing",
                f"provider {provider.name} runs `{' '.join(argv[:3])}` but {repo.name} declares "
                "dependencies and has no node_modules (its build and tests import them)",
                f"install {repo.name}'s locked dependencies" + _manager_hint(repo.path),
                f"({where}{install})" if where else install,
                repository=repo.name,
            )
        )
    if (provider.adapter == "playwright" or "playwright" in words) and javascript.installed(
        repo.path, "@playwright/test"
    ):  # (not installed: the tool-missing finding comes first)
        missing = _browsers_missing(provider, repo)
        if missing is not None:
            out.append(missing)
    if words and words[0] == "cargo" and shutil.which("cargo") is None:
        out.append(
            DoctorFinding(
                "tool-missing",
                f"provider {provider.name} runs cargo but no `cargo` is on PATH",
                "install the Rust toolchain (rustup) so cargo is on PATH",
                "curl --proto '=https' -sSf https://sh.rustup.rs | sh",
                repository=repo.name,
            )
        )
    if words and words[0] == "node" and shutil.which("node") is None:
        out.append(
            DoctorFinding(
                "tool-missing",
                f"provider {provider.name} runs node but no `node` is on PATH",
                "install Node.js 20 or newer",
                None,
                repository=repo.name,
            )
        )
    return out


def _env_finding(provider: Provider, repo: Repository, gap: pyenv.EnvGap) -> DoctorFinding:
    """The interpreter cannot import the runner or the project: prove would discover 0."""
    lacks = [f"the runner ({gap.runner})"] if gap.runner else []
    if gap.missing:
        shown = ", ".join(gap.missing[:6]) + (" …" if len(gap.missing) > 6 else "")
        lacks.append(f"the project or its test dependencies ({shown})")
    where = "" if repo.relpath in (".", "") else f"cd {shlex.quote(repo.relpath)} && "
    return DoctorFinding(
        "tool-missing" if gap.runner else "dependencies-missing",
        f"provider {provider.name} runs `{' '.join((provider.command or ())[:3])}` with "
        f"{gap.interpreter}, which cannot import {' and '.join(lacks)}: prove would "
        "discover no tests",
        f"install {repo.name} and its test dependencies into a virtualenv in the repository "
        "(derived `python` runs the repository's .venv when the provider runs)",
        f"{where}{gap.fix}",
        repository=repo.name,
    )


def _import_findings(provider: Provider, repo: Repository) -> list[DoctorFinding]:
    """The project's packages the command's interpreter would import from an installed copy."""
    out: list[DoctorFinding] = []
    where = "" if repo.relpath in (".", "") else f"cd {shlex.quote(repo.relpath)} && "
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
                f"{where}{python} -m pip install -e .",
                repository=repo.name,
            )
        )
    return out


def _node_install(repo: Path, package: str) -> str:
    """Install what the lock file says, with the package manager that wrote it.

    A package manager missing from PATH (pnpm without corepack) runs through npx at
    the version ``packageManager`` pins, so the pasted command works as printed.
    """
    for lock, tool, command in (
        ("package-lock.json", "npm", "npm ci"),
        ("pnpm-lock.yaml", "pnpm", "pnpm install --frozen-lockfile"),
        ("yarn.lock", "yarn", "yarn install --frozen-lockfile"),
        ("bun.lock", "bun", "bun install --frozen-lockfile"),
        ("bun.lockb", "bun", "bun install --frozen-lockfile"),
    ):
        if (repo / lock).is_file():
            if shutil.which(tool) is not None:
                return command
            return f"npx -y {shlex.quote(package_manager(repo, tool))}{command[len(tool) :]}"
    return f"npm i -D {package}"


def _browsers_missing(provider: Provider, repo: Repository) -> DoctorFinding | None:
    """Playwright would launch a browser it has not downloaded (every test fails, slowly).

    A config naming ``executablePath`` brings its own browser; otherwise Playwright's
    browser folder (``PLAYWRIGHT_BROWSERS_PATH`` or ``~/.cache/ms-playwright``) must
    hold a Chromium.
    """
    import os

    argv = provider.command or ()
    configs = [repo.path / a.split("=", 1)[-1] for a in argv if a.endswith((".ts", ".js", ".mjs"))]
    configs += [repo.path / f"playwright.config{ext}" for ext in javascript.CONFIG_EXTS]
    for config in configs:
        if config.is_file() and "executablePath" in head(config):
            return None
    where = os.environ.get("PLAYWRIGHT_BROWSERS_PATH") or str(Path.home() / ".cache/ms-playwright")
    if where == "0":  # browsers inside node_modules
        where = str(repo.path / "node_modules/playwright-core/.local-browsers")
    try:
        found = [p.name for p in Path(where).iterdir() if p.name.startswith("chromium")]
    except OSError:
        found = []
    if found:
        return None
    system = next(
        (p for w in ("chromium", "chromium-browser", "google-chrome") if (p := shutil.which(w))),
        None,
    )
    alt = (
        f"; where browsers cannot be downloaded, use the system Chromium: set "
        f"`use: {{ launchOptions: {{ executablePath: '{system}' }} }}` in the Playwright config"
        if system
        else ""
    )
    where_cd = "" if repo.relpath in (".", "") else f"cd {shlex.quote(repo.relpath)} && "
    return DoctorFinding(
        "browsers-missing",
        f"provider {provider.name} runs Playwright but no Chromium is installed in {where} "
        "(every browser test would fail)",
        f"download Playwright's Chromium{alt}",
        f"{where_cd}npx playwright install chromium",
        repository=repo.name,
    )


def _needs_node_modules(repo: Path) -> bool:
    """package.json declares dependencies, none installed (no node_modules up the tree)."""
    from changeloop.detect.manifests import read_json

    data = read_json(repo / "package.json") or {}
    if not any(
        isinstance(data.get(k), dict) and data[k] for k in ("dependencies", "devDependencies")
    ):
        return False
    return not any((d / "node_modules").is_dir() for d in (repo, *repo.parents))


def _manager_hint(repo: Path) -> str:
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
    from changeloop.detect.manifests import read_json

    pinned = (read_json(repo / "package.json") or {}).get("packageManager")
    if isinstance(pinned, str) and pinned.startswith(f"{tool}@"):
        return pinned.split("+", 1)[0]
    return tool


_JUNIT_OPT = re.compile(r"--junit-?xml|-p\s*no:junitxml")


def _config_findings(provider: Provider, repo: Repository, cdir: str) -> list[DoctorFinding]:
    """A declared framework configuration the derived command would not honour."""
    argv = provider.command or ()
    out: list[DoctorFinding] = []
    edit = f"${{EDITOR:-vi}} {cdir}/execution.yaml"
    if "pytest" in argv:
        for where, addopts in _pytest_addopts(repo):
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


def _pytest_addopts(repo: Repository) -> list[tuple[str, str]]:
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


def next_steps(
    ctx: ChangeContext, findings: list[DoctorFinding], *, init_pending: bool = True
) -> list[str]:
    """Commands to run next; ``init --write`` only while it would still write something."""
    errors = [f for f in findings if f.severity == "error" and f.playbook_command]
    if errors:
        return [f.playbook_command for f in errors if f.playbook_command]
    prove = f"changeloop prove {shlex.quote(ctx.change.id)}"
    return [init_command(ctx.change.id), prove] if init_pending else [prove]

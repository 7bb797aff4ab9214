"""Tool capability contracts checked: the flags and subcommands each adapter relies on.

Each ``<tool>.yaml`` beside this module names, for one runner an adapter
drives, how the project resolves it and which capabilities the adapter's
commands use. :func:`check_repository` asserts them against the tool the
repository resolves — its ``node_modules/.bin``, its interpreter, or ``PATH``
— by asking the tool's own help for the *presence* of each flag or subcommand
(a word match; the help text is never stored or compared as a whole). Probes
run in an empty temporary directory with plugin autoloading off, so no
project code (config files, conftest, plugins) ever runs::

    reports = check_repository("web", Path("examples/web"), root)
    [r for r in reports if r.status == "drift"]   # tool, version, missing capabilities
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from changeloop.contracts.node_tools import declared_packages, node_bin, package_version
from changeloop.contracts.record import RECORD, tool_stamp

PROBE_TIMEOUT_S = 60
_VERSION = re.compile(r"\d+\.\d+(?:\.\d+)?(?:[-+.][0-9A-Za-z.]+)?")


@dataclass(frozen=True)
class Flag:
    name: str
    aka: tuple[str, ...] = ()  # spellings the tool registers as the same option


@dataclass(frozen=True)
class Probe:
    argv: tuple[str, ...]  # after the tool's own argv, e.g. ("run", "--help")
    flags: tuple[Flag, ...] = ()
    subcommands: tuple[str, ...] = ()
    # a node script printing the package's option names (``PACKAGE_DIR`` is its folder):
    # for a package driven through another tool (jest-junit through jest's --reporters)
    node: str | None = None


def _flag(item: Any) -> Flag:
    if isinstance(item, str):
        return Flag(item)
    return Flag(str(item["name"]), tuple(str(a) for a in item.get("aka", ())))


@dataclass(frozen=True)
class Contract:
    tool: str
    adapters: tuple[str, ...]
    resolve: dict[str, str]  # one of nodeBin (+ package), pythonModule, path
    probes: tuple[Probe, ...]
    when: tuple[str, ...] = ()  # files whose presence makes the tool relevant
    version: tuple[str, ...] = ()  # argv asking the version (when no package.json says it)


@dataclass(frozen=True)
class Missing:
    kind: str  # flag | subcommand
    name: str
    probe: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "name": self.name, "probe": list(self.probe)}


@dataclass(frozen=True)
class ToolReport:
    tool: str
    repository: str
    status: str  # ok | drift | absent
    path: str | None = None
    version: str | None = None
    missing: tuple[Missing, ...] = ()
    message: str = ""
    checked: tuple[str, ...] = field(default_factory=tuple)
    repo_path: str | None = None  # absolute, for the record doctor reads
    stamp: dict[str, Any] | None = None  # the file whose change means "another tool now"

    def to_json(self) -> dict[str, Any]:
        return {
            "tool": self.tool,
            "repository": self.repository,
            "status": self.status,
            "path": self.path,
            "version": self.version,
            "checked": list(self.checked),
            "missing": [m.to_json() for m in self.missing],
            "message": self.message,
        }


@cache
def contracts() -> tuple[Contract, ...]:
    """Every contract shipped in the package, by tool name order."""
    out = []
    folder = resources.files(__package__)
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if not entry.name.endswith(".yaml"):
            continue
        doc = yaml.safe_load(entry.read_text(encoding="utf-8"))
        out.append(
            Contract(
                tool=str(doc["tool"]),
                adapters=tuple(doc.get("adapters", ())),
                resolve={str(k): str(v) for k, v in doc["resolve"].items()},
                probes=tuple(
                    Probe(
                        argv=tuple(p.get("argv", ())),
                        flags=tuple(_flag(f) for f in p.get("flags", ())),
                        subcommands=tuple(p.get("subcommands", ())),
                        node=p.get("node"),
                    )
                    for p in doc["probes"]
                ),
                when=tuple(doc.get("when", ())),
                version=tuple(doc.get("version", ())),
            )
        )
    return tuple(out)


def has_flag(text: str, flag: str) -> bool:
    """``--reporter`` is present as a whole option (not ``--reporter-foo``)."""
    return re.search(rf"(?<![\w-]){re.escape(flag)}(?![\w-])", text) is not None


def has_subcommand(text: str, name: str) -> bool:
    """A help or ``--list`` line starting with the subcommand's name."""
    return re.search(rf"^\s*{re.escape(name)}(?![\w-])", text, re.MULTILINE) is not None


# -- resolving the tool the project would run --------------------------------
def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        {
            "CI": "1",
            "NO_COLOR": "1",
            "FORCE_COLOR": "0",
            "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",  # no third-party plugin code on --help
            "COLUMNS": "200",
        }
    )
    for name in ("NODE_OPTIONS", "PYTEST_ADDOPTS", "PYTEST_PLUGINS"):
        env.pop(name, None)  # no --require / -p of project code into the tool
    return env


def _run(argv: Sequence[str], cwd: Path) -> tuple[int | None, str]:
    try:
        proc = subprocess.run(
            list(argv),
            cwd=cwd,
            env=_env(),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=PROBE_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, str(exc)
    text = proc.stdout.decode("utf-8", "replace") + "\n" + proc.stderr.decode("utf-8", "replace")
    return proc.returncode, text


@dataclass(frozen=True)
class _Resolved:
    argv: list[str] | None  # None: the tool does not resolve
    where: str  # the tool's path, or why it does not resolve
    version: str | None = None
    stamp_file: Path | None = None  # replaced or upgraded tool ⇒ this file changes
    package_dir: Path | None = None  # a node package's folder (``node`` probes read it)


def _resolve(
    contract: Contract, repo: Path, root: Path, scratch: Path, *, own: bool = False
) -> _Resolved:
    """Where the tool comes from for ``repo``; ``own``: only the repository's own install
    (its node_modules/.bin, its .venv), never PATH's interpreter (the matrix)."""
    how = contract.resolve
    if "nodeBin" in how:
        found = node_bin(repo, root, how["nodeBin"])
        if found is None:
            return _Resolved(None, f"no node_modules/.bin/{how['nodeBin']} for this repository")
        package = how.get("package", how["nodeBin"])
        manifest = found.parent.parent / package / "package.json"
        if how.get("requirePackage") == "true" and not manifest.is_file():
            return _Resolved(None, f"no node_modules/{package} beside {how['nodeBin']}")
        return _Resolved(
            [str(found)],
            str(found),
            package_version(found, package),
            manifest if manifest.is_file() else found.resolve(),
            manifest.parent if manifest.is_file() else None,
        )
    if "pythonModule" in how:
        from changeloop.fingerprints.environment import python_for, venv_python  # noqa: PLC0415 - only a pythonModule tool needs the environment fingerprint

        found_venv = venv_python(repo)
        if found_venv is None and own:
            return _Resolved(None, "no .venv in this install")
        # The interpreter prove's derived `python` runs: the repository's virtualenv, else
        # PATH's python (the same resolver, so the two never disagree).
        interpreter = str(found_venv) if found_venv else python_for(repo.absolute())
        module = how["pythonModule"]
        code, text = _run(
            [
                interpreter,
                "-c",
                "import importlib.util, sys; s = importlib.util.find_spec("
                f"{module!r}); print(s.origin if s else ''); sys.exit(s is None)",
            ],
            scratch,
        )
        if code != 0:
            return _Resolved(None, f"{interpreter} cannot import {module}")
        origin = Path(text.strip().splitlines()[0]) if text.strip() else None
        stamp = origin if origin is not None and origin.is_file() else None
        version = None
        if how.get("versionFromInterpreter") == "true":  # a standard-library module
            _code, said = _run(
                [interpreter, "-c", "import sys; print(sys.version.split()[0])"], scratch
            )
            found_version = _VERSION.search(said)
            version = found_version.group(0) if found_version else None
        return _Resolved([interpreter, "-m", module], f"{interpreter} -m {module}", version, stamp)
    found_path = shutil.which(how["path"])
    if found_path is None:
        return _Resolved(None, f"{how['path']} is not on PATH")
    return _Resolved([found_path], found_path, None, Path(found_path).resolve())


def _run_node(script: str, package_dir: Path | None, scratch: Path) -> str:
    """A ``node`` probe's output (empty when the package or node is not there)."""
    node = shutil.which("node")
    if node is None or package_dir is None:
        return ""
    env = {**_env(), "PACKAGE_DIR": str(package_dir)}
    try:
        proc = subprocess.run(
            [node, "-e", script],
            cwd=scratch,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=PROBE_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return proc.stdout.decode("utf-8", "replace")


def _relevant(contract: Contract, repo: Path, root: Path) -> bool:
    """A tool matters when a manifest calls for it (then one that does not resolve is
    reported ``absent``): a node tool when the repository resolves it or its package.json
    depends on its package (a package driven through another tool's bin only when it is
    declared or installed), others when a file of ``when`` exists."""
    if "nodeBin" in contract.resolve:
        package = contract.resolve.get("package", contract.resolve["nodeBin"])
        found = node_bin(repo, root, contract.resolve["nodeBin"])
        if contract.resolve.get("requirePackage") == "true":
            installed = found is not None and (found.parent.parent / package).is_dir()
            return installed or package in declared_packages(repo)
        return found is not None or package in declared_packages(repo)
    return not contract.when or any((repo / name).exists() for name in contract.when)


def check_tool(
    contract: Contract, name: str, repo: Path, root: Path, *, own: bool = False
) -> ToolReport:
    """Assert one contract against the tool ``repo`` resolves; never runs project code."""
    with tempfile.TemporaryDirectory(prefix="changeloop-contract-") as tmp:
        scratch = Path(tmp)
        resolved = _resolve(contract, repo, root, scratch, own=own)
        prefix, version, where = resolved.argv, resolved.version, resolved.where
        if prefix is None:
            return ToolReport(contract.tool, name, "absent", message=where)
        if version is None and contract.version:
            _code, text = _run([*prefix, *contract.version], scratch)
            match = _VERSION.search(text)
            version = match.group(0) if match else None
        missing: list[Missing] = []
        checked: list[str] = []
        for probe in contract.probes:
            if probe.node is not None:
                text = _run_node(probe.node, resolved.package_dir, scratch)
            else:
                _code, text = _run([*prefix, *probe.argv], scratch)
            for flag in probe.flags:
                checked.append(flag.name)
                if not any(has_flag(text, f) for f in (flag.name, *flag.aka)):
                    asked = probe.argv or ("node", "-e", "<the package's option names>")
                    missing.append(Missing("flag", flag.name, asked))
            for sub in probe.subcommands:
                checked.append(sub)
                if not has_subcommand(text, sub):
                    missing.append(Missing("subcommand", sub, probe.argv))
    shown = _display(where, root)
    if missing:
        names = ", ".join(f"{m.kind} {m.name}" for m in missing)
        message = (
            f"{contract.tool} {version or '(version unknown)'} at {shown} lacks {names}, which "
            f"changeloop's {'/'.join(contract.adapters)} adapter relies on"
        )
        status = "drift"
    else:
        status, message = "ok", ""
    return ToolReport(
        contract.tool,
        name,
        status,
        shown,
        version,
        tuple(missing),
        message,
        tuple(checked),
        str(repo.resolve()),
        tool_stamp(resolved.stamp_file),
    )


def _display(where: str, root: Path) -> str:
    path = Path(where)
    if not path.is_absolute():
        return where
    try:
        return path.relative_to(root.resolve()).as_posix()
    except ValueError:
        return where


def check_repository(name: str, repo: Path, root: Path) -> list[ToolReport]:
    """Every contract whose tool this repository uses (present, or called for by a manifest)."""
    return [check_tool(c, name, repo, root) for c in contracts() if _relevant(c, repo, root)]


def check_matrix(folder: Path) -> list[ToolReport]:
    """Each contract against every install of its tool under ``folder``, side by side.

    ``folder`` holds one directory per install, named ``<tool>@<version or label>``
    (``vitest@4.1.12`` with its ``node_modules``, ``pytest@8.4.2`` with a ``.venv``);
    each is checked as a repository of its own, with only its own install.
    """
    by_tool = {c.tool: c for c in contracts()}
    out: list[ToolReport] = []
    for install in sorted(p for p in folder.iterdir() if p.is_dir() and "@" in p.name):
        contract = by_tool.get(install.name.split("@", 1)[0])
        if contract is not None:
            out.append(check_tool(contract, install.name, install, install, own=True))
    return out


def save_record(root: Path, reports: Sequence[ToolReport]) -> None:
    """What the last ``adapters check`` found, for ``doctor`` (which runs nothing)."""
    from changeloop.signing.statement import write_atomic  # noqa: PLC0415 - statement pulls in cryptography; only saving the record needs it
    from changeloop.workspace.state import ensure_gitignored  # noqa: PLC0415 - only saving the record needs the workspace state

    ensure_gitignored(root)
    doc = {
        "version": 1,
        "tools": [
            {**r.to_json(), "repositoryPath": r.repo_path, "stamp": r.stamp}
            for r in reports
            if r.status != "absent"
        ],
    }
    write_atomic(root / RECORD, (json.dumps(doc, indent=2) + "\n").encode())

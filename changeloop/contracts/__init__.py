"""Tool capability contracts: the flags and subcommands each adapter relies on (DESIGN.md §12).

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
from typing import TYPE_CHECKING, Any

import yaml

if TYPE_CHECKING:
    from changeloop.detect import ChangeContext
    from changeloop.detect.doctor import DoctorFinding

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
                        argv=tuple(p["argv"]),
                        flags=tuple(_flag(f) for f in p.get("flags", ())),
                        subcommands=tuple(p.get("subcommands", ())),
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
def _node_bin(repo: Path, root: Path, name: str) -> Path | None:
    """``node_modules/.bin/<name>`` from the repository up to the workspace root (like npx)."""
    here = repo.resolve()
    stop = root.resolve()
    while True:
        candidate = here / "node_modules" / ".bin" / name
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
        if here in (stop, here.parent) or stop not in here.parents:
            return None
        here = here.parent


def _package_version(bin_path: Path, package: str) -> str | None:
    modules = bin_path.parent.parent  # node_modules/
    try:
        data = json.loads((modules / package / "package.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    version = data.get("version") if isinstance(data, dict) else None
    return version if isinstance(version, str) else None


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
    env.pop("NODE_OPTIONS", None)  # no --require of project code into node
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


def _resolve(
    contract: Contract, repo: Path, root: Path, scratch: Path
) -> tuple[list[str] | None, str | None, str]:
    """(argv prefix, version, where) or (None, None, why not)."""
    how = contract.resolve
    if "nodeBin" in how:
        found = _node_bin(repo, root, how["nodeBin"])
        if found is None:
            return None, None, f"no node_modules/.bin/{how['nodeBin']} for this repository"
        return [str(found)], _package_version(found, how.get("package", how["nodeBin"])), str(found)
    if "pythonModule" in how:
        from changeloop.detect.python import venv_python

        interpreter = str(venv_python(repo) or shutil.which("python3") or "python3")
        module = how["pythonModule"]
        code, _ = _run(
            [
                interpreter,
                "-c",
                "import importlib.util, sys;"
                f" sys.exit(importlib.util.find_spec({module!r}) is None)",
            ],
            scratch,
        )
        if code != 0:
            return None, None, f"{interpreter} cannot import {module}"
        return [interpreter, "-m", module], None, f"{interpreter} -m {module}"
    found_path = shutil.which(how["path"])
    if found_path is None:
        return None, None, f"{how['path']} is not on PATH"
    return [found_path], None, found_path


def _relevant(contract: Contract, repo: Path, root: Path) -> bool:
    """A node tool matters when the repository resolves it; others when a manifest calls
    for them (then a tool that does not resolve is reported ``absent``)."""
    if "nodeBin" in contract.resolve:
        return _node_bin(repo, root, contract.resolve["nodeBin"]) is not None
    return not contract.when or any((repo / name).exists() for name in contract.when)


def check_tool(contract: Contract, name: str, repo: Path, root: Path) -> ToolReport:
    """Assert one contract against the tool ``repo`` resolves; never runs project code."""
    with tempfile.TemporaryDirectory(prefix="changeloop-contract-") as tmp:
        scratch = Path(tmp)
        prefix, version, where = _resolve(contract, repo, root, scratch)
        if prefix is None:
            return ToolReport(contract.tool, name, "absent", message=where)
        if version is None and contract.version:
            _code, text = _run([*prefix, *contract.version], scratch)
            match = _VERSION.search(text)
            version = match.group(0) if match else None
        missing: list[Missing] = []
        checked: list[str] = []
        for probe in contract.probes:
            _code, text = _run([*prefix, *probe.argv], scratch)
            for flag in probe.flags:
                checked.append(flag.name)
                if not any(has_flag(text, f) for f in (flag.name, *flag.aka)):
                    missing.append(Missing("flag", flag.name, probe.argv))
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
        return ToolReport(
            contract.tool, name, "drift", shown, version, tuple(missing), message, tuple(checked)
        )
    return ToolReport(contract.tool, name, "ok", shown, version, (), "", tuple(checked))


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


def doctor_findings(ctx: ChangeContext) -> list[DoctorFinding]:
    """Drift between a contract and the resolved tool, as doctor findings with the fix."""
    from changeloop.detect.doctor import DoctorFinding

    out: list[DoctorFinding] = []
    for name, repo in ctx.repositories.items():
        for report in check_repository(name, repo.path, ctx.root):
            if report.status != "drift":
                continue
            out.append(
                DoctorFinding(
                    "tool-contract-drift",
                    report.message,
                    f"install a {report.tool} version that has "
                    f"{', '.join(m.name for m in report.missing)} (pin it in the repository's "
                    "lock file), or wire the provider's command by hand in execution.yaml",
                    "changeloop adapters check",
                    repository=name,
                )
            )
    return out

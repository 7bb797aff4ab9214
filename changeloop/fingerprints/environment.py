"""The environment that runs a command: which executable, and what it can import.

Two jobs, both about the executable a provider's command names (docs/processes.md):

- :func:`resolve_argv` — derived wiring names its interpreter ``python``; the
  repository's own virtualenv (``.venv/bin/python``) is chosen when the command
  runs, so a venv made after ``init`` is used. Any other word (an explicit
  ``python3`` in execution.yaml) is never rewritten.
- :func:`part` — the environment part of a fingerprint: the sha256 of the
  resolved executable's bytes (symlinks followed; remembered by path, size and
  mtime in ``.changeloop/executables.json``), a shebang script's interpreter,
  the version of a ``node_modules/.bin`` tool or ``npx <tool>`` package, and,
  for a Python interpreter, the sorted names and versions of its installed
  distributions. Installing a plugin or upgrading a tool changes it, so a
  cached pass never hides an environment fix. Paths are left out: the part is
  portable across machines.

Example::

    >>> resolve_argv(("python", "-m", "pytest"), Path("repo"))
    ('/abs/repo/.venv/bin/python', '-m', 'pytest')
    >>> part(("npx", "vitest", "run"), Path("repo"), Path(".changeloop"))["tool"]
    {'name': 'vitest', 'version': '3.2.4'}
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from changeloop import fsio
from changeloop.errors import FileRefused

if TYPE_CHECKING:  # annotations only: a no-change re-prove builds no model
    from changeloop.model import Plan, Provider

__all__ = [
    "DERIVED_PYTHON",
    "installed",
    "part",
    "part_for",
    "python_for",
    "resolve_argv",
    "sha256_of",
]

DERIVED_PYTHON = "python"  # the interpreter word derived wiring writes
VENV_DIRS = (".venv", "venv", "env", ".env")
CACHE_FILE = "executables.json"
HASHES_LIMIT = 16 * 1024 * 1024  # thousands of remembered executables fit many times over
PYTHONS_FILE = "interpreters.json"  # what each interpreter reported, with its folders' mtimes
TIMEOUT_S = 30
_PYTHON = re.compile(r"^python(\d+(\.\d+)?)?$")
_SH_EXEC = re.compile(r"^'''exec' (\S+) ")  # pip's launcher of a long shebang
_DISTS = (
    "import sys, json, importlib.metadata as m\n"
    "d = sorted({(x.metadata['Name'] or '', x.version or '') for x in m.distributions()})\n"
    "print(json.dumps({'executable': sys.executable, 'version': sys.version.split()[0],"
    " 'distributions': [f'{n}=={v}' for n, v in d if n], 'path': sys.path}))\n"
)
# What an interpreter reported, with the mtimes of its sys.path folders then
# (installing or upgrading a distribution changes its folder's mtime): per
# process here, and across processes in ``.changeloop/interpreters.json``.
_PYTHON_SEEN: dict[str, tuple[list[tuple[str, int]], dict[str, Any]]] = {}


def venv_python(repo: Path) -> Path | None:
    """The repository's own virtualenv interpreter (absolute), if it has one now."""
    for name in VENV_DIRS:
        if (repo / name / "pyvenv.cfg").is_file():
            for rel in ("bin/python", "Scripts/python.exe"):
                if (repo / name / rel).exists():
                    return (repo / name / rel).absolute()
    return None


def python_for(repo: Path, path_env: str | None = None) -> str:
    """What derived ``python`` means in ``repo`` right now: its venv, else PATH's python."""
    venv = venv_python(repo)
    if venv is not None:
        return str(venv)
    for word in ("python", "python3"):
        if shutil.which(word, path=path_env) is not None:
            return word
    return "python3"


def resolve_argv(
    argv: Sequence[str], repo: Path, env: Mapping[str, str] | None = None
) -> tuple[str, ...]:
    """``argv`` with derived ``python`` resolved against ``repo`` (the user's checkout)."""
    if not argv or argv[0] != DERIVED_PYTHON:
        return tuple(argv)
    path_env = (env or os.environ).get("PATH")
    return (python_for(repo, path_env), *argv[1:])


def expand_globs(argv: Sequence[str], workdir: Path) -> tuple[str, ...]:
    """``node --test`` paths with their globs expanded as a shell would, when it runs.

    Node 20 does not expand ``dist-node/test/*.js`` itself, and the files it names
    may only exist once a build step ran. A pattern matching nothing stays as
    written (the shell's behaviour); anything that is not ``node --test`` is left alone.
    """
    if not argv or argv[0].rsplit("/", 1)[-1] != "node" or "--test" not in argv:
        return tuple(argv)
    out: list[str] = []
    for arg in argv:
        if arg.startswith("-") or not any(ch in arg for ch in "*?["):
            out.append(arg)
            continue
        matches = sorted(p.relative_to(workdir).as_posix() for p in workdir.glob(arg))
        out.extend(matches or [arg])
    return tuple(out)


def _which(word: str, repo: Path, path_env: str | None) -> Path | None:
    if "/" in word:
        path = Path(word) if Path(word).is_absolute() else repo / word
        return path if path.exists() else None
    found = shutil.which(word, path=path_env)
    return Path(found) if found else None


class _Hashes:
    """sha256 of files, remembered in ``.changeloop/`` by path and (device, inode, size,
    mtime_ns, ctime_ns): a rewrite in place that restores size and mtime still moves the
    ctime, which no user can set, so it is hashed again."""

    def __init__(self, state: Path | None) -> None:
        self.file = state / CACHE_FILE if state is not None else None
        self.known: dict[str, list[Any]] = {}
        self.dirty = False
        if self.file is not None:
            # Bounded, never through a link, a FIFO or deep nesting: damaged or absent, rebuilt
            doc = fsio.load_state_json(self.file, limit=HASHES_LIMIT)
            if isinstance(doc, dict):
                self.known = {k: v for k, v in doc.items() if isinstance(v, list)}

    def get(self, path: Path) -> str | None:
        try:
            st = path.stat()
        except OSError:
            return None
        key = str(path)
        seen = self.known.get(key)
        stamp = [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]
        if (
            seen is not None
            and len(seen) == len(stamp) + 1
            and seen[:-1] == stamp
            and isinstance(seen[-1], str)
        ):
            return seen[-1]
        digest = sha256_of(path)
        if digest is not None:
            self.known[key] = [*stamp, digest]
            self.dirty = True
        return digest

    def save(self) -> None:
        if not self.dirty or self.file is None:
            return
        try:
            self.file.parent.mkdir(parents=True, exist_ok=True)
            # its temporary names its writer: a kill mid-write leaves one the sweep removes
            fsio.write_atomic(self.file, json.dumps(self.known).encode(), durable=False)
        except OSError:
            pass  # a memory, not a record: the next run hashes again


def sha256_of(path: Path) -> str | None:
    digest = hashlib.sha256()
    try:
        with path.open("rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                digest.update(block)
    except OSError:
        return None
    return "sha256:" + digest.hexdigest()


def _shebang(path: Path) -> list[str]:
    """The interpreter line's words; for pip's ``#!/bin/sh`` launcher (a shebang too long
    for the kernel: its second line ``exec``s the real Python) that Python."""
    try:
        with path.open("rb") as fh:
            line = fh.readline(512).decode("utf-8", errors="replace")
            following = fh.readline(4096).decode("utf-8", errors="replace")
    except OSError:
        return []
    if not line.startswith("#!"):
        return []
    words = line[2:].strip().split()
    found = _SH_EXEC.match(following)
    if words and words[0].rsplit("/", 1)[-1] in ("sh", "bash") and found:
        return [found.group(1)]
    return words


def _package_of(path: Path, stop: Path) -> dict[str, str] | None:
    """name and version of the npm package holding ``path`` (nearest package.json)."""
    for folder in path.parents:
        meta = folder / "package.json"
        if meta.is_file():
            try:
                doc = json.loads(meta.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                return None
            if isinstance(doc, dict) and isinstance(doc.get("name"), str):
                return {"name": doc["name"], "version": str(doc.get("version"))}
        if folder in (stop, folder.parent):
            return None
    return None


def _bin_tool(repo: Path, tool: str) -> dict[str, str] | None:
    for base in (repo, *repo.parents):
        link = base / "node_modules" / ".bin" / tool
        if link.exists():
            return _package_of(link.resolve(), base / "node_modules")
    return None


def _mtimes(paths: Sequence[str]) -> list[tuple[str, int]]:
    out = []
    for folder in paths:
        try:
            out.append((folder, Path(folder).stat().st_mtime_ns))
        except OSError:
            out.append((folder, -1))
    return out


def _python(
    real: Path, state: Path | None = None, env: Mapping[str, str] | None = None
) -> dict[str, Any] | None:
    """The interpreter's executable and distributions: it is asked, no project code runs.

    Asking costs a process; the answer is remembered per process and in
    ``state``/interpreters.json, keyed by the interpreter's path and identity (device,
    inode, size, mtime_ns, ctime_ns) and the environment it is asked in (a pyenv shim
    picks its Python from it), and valid while every folder of its ``sys.path`` keeps
    its mtime. ``env``: the environment the provider's command gets.
    """
    try:
        st = real.stat()
    except OSError:
        return None
    probe_env = {**(os.environ if env is None else env), "PYTHONDONTWRITEBYTECODE": "1"}
    said = hashlib.sha256(json.dumps(sorted(probe_env.items())).encode()).hexdigest()[:16]
    key = (
        f"{real}\0{st.st_dev}\0{st.st_ino}\0{st.st_size}\0{st.st_mtime_ns}"
        f"\0{st.st_ctime_ns}\0{said}"
    )
    seen = _PYTHON_SEEN.get(key) or _remembered_python(state, key)
    if seen is not None and _mtimes([p for p, _ in seen[0]]) == seen[0]:
        _PYTHON_SEEN[key] = seen
        return seen[1]
    try:
        proc = subprocess.run(
            [str(real), "-I", "-c", _DISTS],
            capture_output=True,
            text=True,
            timeout=TIMEOUT_S,
            check=False,
            env=probe_env,
        )
        doc = json.loads(proc.stdout) if proc.returncode == 0 else None
    except (OSError, ValueError, subprocess.TimeoutExpired):
        doc = None
    if not isinstance(doc, dict):
        return None
    paths = doc.pop("path", None)
    if isinstance(paths, list):
        _PYTHON_SEEN[key] = (_mtimes([str(p) for p in paths if p]), doc)
        _remember_python(state, key, _PYTHON_SEEN[key])
    return doc


def _pythons(state: Path | None) -> dict[str, Any]:
    if state is None:
        return {}
    try:
        raw = fsio.read_regular(state / PYTHONS_FILE, limit=4 * fsio.MIB, what="interpreters")
        doc = json.loads(raw)
    except (FileRefused, ValueError, RecursionError):
        return {}  # damaged or absent: asked again
    return doc if isinstance(doc, dict) else {}


def _remembered_python(
    state: Path | None, key: str
) -> tuple[list[tuple[str, int]], dict[str, Any]] | None:
    entry = _pythons(state).get(key)
    try:
        folders = [(str(f), int(m)) for f, m in entry["folders"]]  # type: ignore[index]
        doc = entry["report"]  # type: ignore[index]
    except (TypeError, KeyError, ValueError):
        return None
    return (folders, doc) if isinstance(doc, dict) else None


def _remember_python(
    state: Path | None, key: str, seen: tuple[list[tuple[str, int]], dict[str, Any]]
) -> None:
    if state is None:
        return
    known = _pythons(state)
    known[key] = {"folders": [list(f) for f in seen[0]], "report": seen[1]}
    try:
        state.mkdir(parents=True, exist_ok=True)
        fsio.write_atomic(state / PYTHONS_FILE, json.dumps(known).encode("utf-8"), durable=False)
    except OSError:
        pass  # a memory, not a record: the next run asks again


def part(
    argv: Sequence[str] | None,
    repo: Path,
    state: Path | None,
    env: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """The environment part of a fingerprint for a command run in ``repo``.

    Empty for a provider that runs nothing. A missing executable is recorded as
    such (the run will fail; nothing is cached from it anyway). ``env``: the
    environment the command gets (``changeloop.passenv``); its ``PATH`` resolves
    the executables and a Python is asked in it.
    """
    if not argv:
        return {}
    path_env = (env or os.environ).get("PATH")
    argv = resolve_argv(argv, repo, env)
    hashes = _Hashes(state)
    out: dict[str, Any] = {}
    found = _which(argv[0], repo, path_env)
    if found is None:
        return {"executable": None}
    real = found.resolve()
    out["executable"] = hashes.get(real)
    shebang = _shebang(real)
    # Run a Python as named (a venv's bin/python is a symlink: resolved, it loses the venv).
    python_exe = found if _PYTHON.match(found.name) or _PYTHON.match(real.name) else None
    if shebang:
        env_form = shebang[0].endswith("/env") and len(shebang) > 1
        interp = _which(shebang[1] if env_form else shebang[0], repo, path_env)
        if interp is not None:
            out["interpreter"] = hashes.get(interp.resolve())
            if python_exe is None and _PYTHON.match(interp.name):
                python_exe = interp
    words = [a.rsplit("/", 1)[-1] for a in argv]
    if words[0] == "env":  # `env [NAME=value…] program …`: the program is what runs
        program = next((a for a in argv[1:] if "=" not in a and not a.startswith("-")), None)
        ran = _which(program, repo, path_env) if program else None
        out["program"] = hashes.get(ran.resolve()) if ran is not None else None
        if ran is not None and python_exe is None and _PYTHON.match(ran.name):
            python_exe = ran
    if python_exe is not None:
        doc = _python(python_exe, state, env)
        if doc is not None:
            exe = Path(str(doc.get("executable", ""))).resolve()
            out["python"] = {
                "executable": hashes.get(exe) if exe.is_file() else None,
                "version": doc.get("version"),
                "distributions": doc.get("distributions"),
            }
    if words[0] == "npx" and len(argv) > 1:
        tool = next((a for a in argv[1:] if not a.startswith("-")), None)
        if tool is not None:
            out["tool"] = _bin_tool(repo, tool)
            out["toolBytes"] = _bin_bytes(repo, tool, hashes)
    elif "node_modules/.bin/" in argv[0]:
        out["tool"] = _package_of(real, real.parent)
    out["installed"] = installed(repo, hashes)
    hashes.save()
    return out


# What a package manager records of what it installed (node resolves modules upwards, so
# the checkout's parents count too), and the virtualenvs of the checkout.
INSTALL_RECORDS = (
    "node_modules/.package-lock.json",  # npm
    "node_modules/.modules.yaml",  # pnpm
    "node_modules/.pnpm/lock.yaml",  # pnpm
    "node_modules/.yarn-state.yml",  # yarn berry, node-modules linker
    "node_modules/.yarn-integrity",  # yarn classic
    ".yarn/install-state.gz",  # yarn berry
    ".pnp.cjs",  # yarn berry, plug'n'play
    "Cargo.lock",  # cargo (an ignored one is nobody's content)
)


def installed(repo: Path, hashes: _Hashes | None = None) -> dict[str, Any]:
    """What is installed where a command in ``repo`` resolves its dependencies: the package
    managers' own records (``INSTALL_RECORDS``, in ``repo`` and each folder above it: key
    ``<levels up>:<record>``) and each virtualenv's distributions (their ``RECORD`` files).

    Installing another version rewrites the record, so the digest moves; editing an
    installed file in place does not (docs/fingerprints.md says what stays unbound).
    """
    hashes = hashes if hashes is not None else _Hashes(None)
    out: dict[str, Any] = {}
    for up, folder in enumerate((repo, *repo.parents)):
        for rel in INSTALL_RECORDS:
            path = folder / rel
            if path.is_file():
                out[f"{up}:{rel}"] = hashes.get(path)
    for name in VENV_DIRS:
        venv = repo / name
        if (venv / "pyvenv.cfg").is_file():
            out[f"venv:{name}"] = _venv_distributions(venv, hashes)
    return out


def _venv_distributions(venv: Path, hashes: _Hashes) -> dict[str, str | None]:
    """``<site-packages>/<entry>`` -> digest, for every distribution (its ``RECORD``, the
    list of installed files with their hashes) and ``.pth`` file of the virtualenv."""
    out: dict[str, str | None] = {}
    for site in sorted([*venv.glob("lib/python*/site-packages"), *venv.glob("Lib/site-packages")]):
        try:
            entries = sorted(os.scandir(site), key=lambda e: e.name)
        except OSError:
            continue
        where = site.relative_to(venv).as_posix()
        for entry in entries:
            if entry.name.endswith((".dist-info", ".egg-info")) and entry.is_dir():
                listed = "RECORD" if entry.name.endswith(".dist-info") else "PKG-INFO"
                out[f"{where}/{entry.name}"] = hashes.get(Path(entry.path) / listed)
            elif entry.name.endswith(".pth") and entry.is_file():
                out[f"{where}/{entry.name}"] = hashes.get(Path(entry.path))
    return out


def _bin_bytes(repo: Path, tool: str, hashes: _Hashes) -> str | None:
    """The bytes of the script ``npx <tool>`` starts (a version number does not move when
    an installed file is patched in place)."""
    for base in (repo, *repo.parents):
        link = base / "node_modules" / ".bin" / tool
        if link.exists():
            return hashes.get(link.resolve())
    return None


def part_for(provider: Provider, plan: Plan, state: Path) -> dict[str, Any]:
    """:func:`part` for a provider's command, resolved in its repository's checkout."""
    return part(provider.command, checkout_for(provider, plan), state, None)


def checkout_for(provider: Provider, plan: Plan) -> Path:
    """Where a provider's command is resolved for its environment part: its
    repository's checkout, or the folder of it the command runs in (``workdir``)."""
    repo = plan.repositories.get(provider.repository or "")
    if repo is None and len(plan.repositories) == 1:
        repo = next(iter(plan.repositories.values()))
    base = repo.path if repo else plan.root
    return base / provider.workdir if provider.workdir else base

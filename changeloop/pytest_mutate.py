"""pytest plugin ``changeloop_mutate``: many mutants in one pytest process.

The mutation adapter copies this file next to the claim plugin and runs the
project's own pytest once with ``-p changeloop_mutate`` and
``CHANGELOOP_MUTANTS`` naming a JSON file::

    {"results": "<dir>", "jobs": 2, "timeoutMs": 10000,
     "mutants": [{"id": "m0", "file": "/abs/shop/pricing.py", "qualname": "total",
                  "source": "<the whole mutated module>", "tests": ["tests/test_x.py::test_a"]}]}

Collection imports the project once. Then, instead of pytest's run loop, each
mutant runs in a child forked from this process: the child compiles the
mutated module and runs its body once in a namespace of its own (a mutant that
breaks the module's import is ``unimportable``: skipped, not scored, as a fresh
import would show — unless the unmutated module cannot run twice either), takes
the mutated function's code object and puts it into the live function(s) of
that file and qualified name (``function.__code__``: every reference — an
import elsewhere, a decorator's wrapped function — sees it), runs that mutant's
tests in order and stops at the first failure. A fork per mutant keeps mutants
apart: what one mutant's tests leave behind (a cache, a module global) never
reaches the next.

Each child writes ``<results>/<id>.json``: ``{"fate": "killed" | "survived" |
"unimportable" | "unswappable", "test"?: the failing test, "why"?: ...}``. ``unswappable`` (the
function is not loaded, is nested in another function, or the mutant changes
its free variables) sends the mutant back to the adapter, which runs it the
slow way: one pytest per mutant. A child that outlives ``timeoutMs`` is killed
with its process group (a timeout kills the mutant, as a hang is a changed
behaviour). Up to ``jobs`` children run at once.

What this cannot see that a fresh process would: a mutant of a function that
ran at import time (its result is already computed) — the adapter only
mutates functions the citing tests ran under entry points.

Dependency-free on purpose (pytest and the standard library only), like the
claim plugin it travels with.
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
import signal
import sys
import time
import types
from pathlib import Path
from typing import Any

import pytest

MUTANTS_ENV = "CHANGELOOP_MUTANTS"
UNSWAPPABLE = 3  # a child's exit code: put the mutant back to the adapter


def _config() -> dict[str, Any] | None:
    name = os.environ.get(MUTANTS_ENV)
    if not name:
        return None
    try:
        doc = json.loads(Path(name).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) and isinstance(doc.get("mutants"), list) else None


@pytest.hookimpl(tryfirst=True)
def pytest_runtestloop(session: pytest.Session) -> bool | None:
    config = _config()
    if config is None:
        return None  # not a mutation run: pytest's own loop
    results = Path(str(config["results"]))
    results.mkdir(parents=True, exist_ok=True)
    if session.testsfailed:  # a collection error: nothing here is the project as it is
        _write(results / "session.json", {"error": "collection failed"})
        return True
    items = {item.nodeid: item for item in session.items}
    index = _live_functions({str(m.get("file")) for m in config["mutants"]})
    _run_all(session, config, items, index, results)
    return True


def _live_functions(files: set[str]) -> dict[tuple[str, str], list[types.FunctionType]]:
    """(real file, qualname) -> the function objects alive now, for the mutated files."""
    wanted = {os.path.realpath(f) for f in files}
    for file in wanted:
        _import_file(file)
    out: dict[tuple[str, str], list[types.FunctionType]] = {}
    for obj in gc.get_objects():
        if isinstance(obj, types.FunctionType):
            code = obj.__code__
            real = os.path.realpath(code.co_filename)
            if real in wanted:
                out.setdefault((real, code.co_qualname), []).append(obj)
    return out


def _import_file(file: str) -> None:
    """Import the module of ``file`` if no loaded module comes from it (best effort)."""
    for module in list(sys.modules.values()):
        found = getattr(module, "__file__", None)
        if isinstance(found, str) and os.path.realpath(found) == file:
            return
    for entry in sys.path:
        base = os.path.realpath(entry or ".")
        if not file.startswith(base + os.sep):
            continue
        parts = Path(os.path.relpath(file, base)).with_suffix("").parts
        if parts and parts[-1] == "__init__":
            parts = parts[:-1]
        if parts and all(p.isidentifier() for p in parts):
            with contextlib.suppress(Exception):
                __import__(".".join(parts))
                return


def _run_all(
    session: pytest.Session,
    config: dict[str, Any],
    items: dict[str, pytest.Item],
    index: dict[tuple[str, str], list[types.FunctionType]],
    results: Path,
) -> None:
    jobs = max(1, int(config.get("jobs") or 1))
    timeout = max(1.0, float(config.get("timeoutMs") or 10_000) / 1000)
    pending = list(config["mutants"])
    running: dict[int, tuple[dict[str, Any], float]] = {}
    sys.stdout.flush()
    sys.stderr.flush()
    while pending or running:
        while pending and len(running) < jobs:
            mutant = pending.pop(0)
            try:
                pid = os.fork()
            except Exception as exc:  # threads (a warning made an error) or no fork here
                for rest in (mutant, *pending):
                    _write(results / f"{rest['id']}.json", {"fate": "unswappable", "why": str(exc)})
                pending = []
                break
            if pid == 0:
                _child(session, mutant, items, index, results)  # never returns
            with contextlib.suppress(OSError):
                os.setpgid(pid, pid)
            running[pid] = (mutant, time.monotonic())
        _reap(running, timeout, results)


def _reap(running: dict[int, tuple[dict[str, Any], float]], timeout: float, results: Path) -> None:
    """Collect children that ended; kill (with their groups) those past ``timeout``."""
    if not running:
        return
    pid, status = os.waitpid(-1, os.WNOHANG)
    if pid == 0:
        now = time.monotonic()
        for child, (mutant, started) in list(running.items()):
            if now - started > timeout:
                with contextlib.suppress(OSError):
                    os.killpg(child, signal.SIGKILL)
                with contextlib.suppress(ChildProcessError):
                    os.waitpid(child, 0)
                del running[child]
                _write(results / f"{mutant['id']}.json", {"fate": "killed", "why": "timeout"})
        time.sleep(0.005)
        return
    entry = running.pop(pid, None)
    if entry is None:
        return
    mutant = entry[0]
    target = results / f"{mutant['id']}.json"
    if not target.exists():  # the child died before it could say (a crash is a kill)
        code = os.waitstatus_to_exitcode(status)
        _write(target, {"fate": "killed", "why": f"the test process ended with {code}"})


def _child(
    session: pytest.Session,
    mutant: dict[str, Any],
    items: dict[str, pytest.Item],
    index: dict[tuple[str, str], list[types.FunctionType]],
    results: Path,
) -> None:
    target = results / f"{mutant['id']}.json"
    code = UNSWAPPABLE
    try:
        os.setpgid(0, 0)
        _quiet()
        try:
            why = _swap(mutant, index)
        except _Unimportable as exc:
            _write(target, {"fate": "unimportable", "why": str(exc)})
            return
        if why is not None:
            _write(target, {"fate": "unswappable", "why": why})
            return
        failed = _run_tests(session, [items[t] for t in mutant["tests"] if t in items])
        _write(target, {"fate": "killed", "test": failed} if failed else {"fate": "survived"})
        code = 1 if failed else 0
    except BaseException as exc:
        with contextlib.suppress(BaseException):
            _write(target, {"fate": "unswappable", "why": f"{type(exc).__name__}: {exc}"})
    finally:
        os._exit(code)


def _quiet() -> None:
    """The child's output goes nowhere: the results say what happened."""
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)
    os.dup2(null, 2)
    os.close(null)


def _swap(
    mutant: dict[str, Any], index: dict[tuple[str, str], list[types.FunctionType]]
) -> str | None:
    """Put the mutant's code into the live function(s); why not, or None when done."""
    file = os.path.realpath(str(mutant["file"]))
    qualname = str(mutant["qualname"])
    live = index.get((file, qualname)) or []
    if not live:
        return f"no loaded function {qualname} of {file}"
    try:
        module_code = compile(str(mutant["source"]), file, "exec")
    except (SyntaxError, ValueError) as exc:
        return f"does not compile: {exc}"
    broken = _import_breaks(file, module_code)
    if broken is not None:
        raise _Unimportable(broken)
    found = [c for c in _codes(module_code) if c.co_qualname == qualname]
    if len(found) != 1:
        return f"{len(found)} functions named {qualname} in the mutated module"
    new = found[0]
    for function in live:
        if function.__code__.co_freevars != new.co_freevars:
            return "the mutant changes the function's free variables"
    for function in live:
        function.__code__ = new
    return None


class _Unimportable(Exception):
    """The mutated module's body fails where the unmutated one runs."""


def _import_breaks(file: str, mutated: types.CodeType) -> str | None:
    """Why the mutated module would not import, or None. Runs the module's body in a
    namespace of its own (this is a forked child): the unmutated body first, since a
    module that cannot run twice tells nothing about its mutant."""
    live = next(
        (
            m
            for m in list(sys.modules.values())
            if isinstance(found := getattr(m, "__file__", None), str)
            and os.path.realpath(found) == file
        ),
        None,
    )
    if live is None:
        return None

    def run(code: types.CodeType) -> str | None:
        space = types.ModuleType(live.__name__)
        for key in ("__file__", "__package__", "__spec__", "__path__", "__loader__"):
            if hasattr(live, key):
                setattr(space, key, getattr(live, key))
        try:
            exec(code, space.__dict__)  # noqa: S102 — the project's own module, mutated
        except BaseException as exc:
            return f"{type(exc).__name__}: {exc}"
        return None

    try:
        original = compile(Path(file).read_text(encoding="utf-8"), file, "exec")
    except (OSError, SyntaxError, ValueError, UnicodeDecodeError):
        return None
    if run(original) is not None:
        return None
    return run(mutated)


def _codes(code: types.CodeType) -> list[types.CodeType]:
    out = []
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            out.append(const)
            out.extend(_codes(const))
    return out


def _run_tests(session: pytest.Session, items: list[pytest.Item]) -> str | None:
    """Run ``items`` in order through pytest's own protocol; the first that fails, or None."""
    for i, item in enumerate(items):
        before = session.testsfailed
        nextitem = items[i + 1] if i + 1 < len(items) else None
        item.ihook.pytest_runtest_protocol(item=item, nextitem=nextitem)
        if session.testsfailed > before:
            return item.nodeid
    return None


def _write(path: Path, doc: dict[str, Any]) -> None:
    temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temp.write_text(json.dumps(doc), encoding="utf-8")
    temp.replace(path)

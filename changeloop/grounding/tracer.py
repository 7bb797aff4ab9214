"""Trace one test's call tree and say whether it ran production code under an entry point.

Standard library only, on purpose: the pytest plugin runs inside a project's
own interpreter, where changeloop is not installed, so the test-discovery
adapter copies this file next to the plugin as ``changeloop_grounding.py``.

Example::

    scope = Scope(root, production=is_code, artifact=is_artifact, entries={(file, "create_app")})
    tracer = make(scope)           # sys.monitoring on 3.12+, sys.settrace/sys.setprofile on 3.11
    tracer.begin(watch=test_codes) # the test function's own code objects (for reads by name)
    tracer.label("fixture db")     # where the test is: a fixture's setup, "setup", "call"
    ...                            # the test's setup and call run here
    observed = tracer.end()
    observed.grounding   # grounded | ungrounded | inert | untouched | dispatched | not-checked

Rules: ``grounded`` — an entry point ran, and with it production code (the
entry point is production code itself); ``dispatched`` — no entry point ran
and a hand-off to a thread, process or executor was seen (what runs there is
not followed); ``ungrounded`` — production code ran under no entry point;
``inert`` — no production function ran, and the test *read* the production
artifact; ``untouched`` — it did neither (``assert True``).

What counts as a read, on the traced thread during the test's setup and call:

- opening a production artifact — any file of the repository that is not a
  test file (``open``, ``Path.read_text``, ``importlib.resources``, ``inspect``
  reading source: Python's ``open`` audit event);
- importing a production module (its body runs) or a test line that imports one;
- a line of the test's own code that ran and loaded, by name, a production
  module, function or class, or an instance of one (a global, or a fixture
  argument of the test).

Reads by name are seen through line events of the test's own code. Where
those events cannot be had (on 3.11 another trace function, e.g. coverage's,
holds ``sys.settrace``; grounding then uses ``sys.setprofile``), a test in
which nothing else was seen is ``not-checked`` with that reason, never
``untouched`` or ``inert``.

Besides the value: ``reached_outside_entry`` (production functions ran outside
every entry point's frames; None where it cannot be seen), ``grounded_by`` (the
fixture whose setup ran the entry point when the test's call did not) and, when
asked, the production lines that ran (the mutation adapter's ``reached``).

Any doubt about the trace itself (another tracer active or installed
mid-test, no free monitoring tool id, an error inside the tracer) gives
``not-checked`` with why: a positive answer is never given on partial evidence.
"""

from __future__ import annotations

import dis
import os
import sys
import threading
import types
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from types import CodeType, FrameType
from typing import Any

GROUNDED = "grounded"
UNGROUNDED = "ungrounded"
INERT = "inert"
UNTOUCHED = "untouched"
DISPATCHED = "dispatched"
NOT_CHECKED = "not-checked"
VALUES = (GROUNDED, UNGROUNDED, INERT, UNTOUCHED, DISPATCHED, NOT_CHECKED)
TOOL_NAME = "changeloop-grounding"
# Free sys.monitoring ids first: 0 debugger, 1 coverage, 2 profiler, 5 optimizer.
_TOOL_IDS = (3, 4, 2)

BORING, PRODUCTION, ENTRY, HANDOFF, BODY = 0, 1, 2, 3, 4
_CO_OPTIMIZED = 0x1  # set on function code, not on module or class bodies
Function = tuple[str, str, int]  # (file relative to the root, qualname, first line)
_LOADS = ("LOAD_GLOBAL", "LOAD_NAME", "LOAD_FAST", "LOAD_DEREF", "IMPORT_NAME")


@dataclass
class Scope:
    """What counts as production code and artifacts, and which functions are entry points.

    ``production(path)`` (a ``.py`` file that is not a test module) and
    ``artifact(path)`` (any file that is not a test file) receive a real path;
    ``entries`` holds ``(real path, qualname)`` pairs. ``lines``: record the
    production lines each test ran (the mutation adapter asks for them).
    """

    root: str
    production: Callable[[str], bool]
    entries: frozenset[tuple[str, str]]
    artifact: Callable[[str], bool] | None = None
    lines: bool = False
    _kinds: dict[str, bool] = field(default_factory=dict)
    _artifacts: dict[str, bool] = field(default_factory=dict)
    _real: dict[str, str] = field(default_factory=dict)
    _relative: dict[str, str] = field(default_factory=dict)
    codes: dict[CodeType, tuple[int, Function | None]] = field(default_factory=dict)

    def real(self, filename: str) -> str:
        found = self._real.get(filename)
        if found is None:
            found = os.path.realpath(filename) if not filename.startswith("<") else filename
            self._real[filename] = found
        return found

    def is_production(self, filename: str) -> bool:
        kind = self._kinds.get(filename)
        if kind is None:
            kind = not filename.startswith("<") and self.production(self.real(filename))
            self._kinds[filename] = kind
        return kind

    def is_artifact(self, path: str) -> bool:
        """A file of the repository that is not a test file (code, data, schema, template)."""
        kind = self._artifacts.get(path)
        if kind is None:
            test = self.artifact or self.production
            kind = not path.startswith("<") and test(self.real(path))
            self._artifacts[path] = kind
        return kind

    def is_entry(self, code: CodeType) -> bool:
        return (self.real(code.co_filename), code.co_qualname) in self.entries

    def relative(self, filename: str) -> str:
        found = self._relative.get(filename)
        if found is None:
            found = os.path.relpath(self.real(filename), self.root).replace(os.sep, "/")
            self._relative[filename] = found
        return found


@dataclass
class Observed:
    """What one traced test did."""

    grounding: str
    reason: str | None = None
    functions: list[Function] = field(default_factory=list)  # production code under entry points
    reached_outside_entry: bool | None = None  # None: it cannot be seen
    grounded_by: str | None = None  # "fixture <name>": only the setup ran an entry point
    reads: list[str] = field(default_factory=list)  # what the test read, in words
    lines: dict[str, list[int]] | None = None  # production lines that ran (when asked)


def handoff_codes() -> frozenset[CodeType]:
    """Code objects whose start means work leaves the traced thread."""
    import asyncio.base_events  # noqa: PLC0415 - imported into the project's test process only when a tracer is made
    import concurrent.futures  # noqa: PLC0415 - imported into the project's test process only when a tracer is made
    import multiprocessing.process  # noqa: PLC0415 - imported into the project's test process only when a tracer is made
    import subprocess  # noqa: PLC0415 - imported into the project's test process only when a tracer is made

    funcs: list[Any] = [
        threading.Thread.start,
        concurrent.futures.ThreadPoolExecutor.submit,
        concurrent.futures.ProcessPoolExecutor.submit,
        asyncio.base_events.BaseEventLoop.run_in_executor,
        multiprocessing.process.BaseProcess.start,
        subprocess.Popen.__init__,  # a child process is not followed either
    ]
    return frozenset(f.__code__ for f in funcs if hasattr(f, "__code__"))


def nested_codes(code: CodeType) -> list[CodeType]:
    """``code`` and the code objects defined inside it (comprehensions, lambdas)."""
    out = [code]
    for const in code.co_consts:
        if isinstance(const, CodeType):
            out.extend(nested_codes(const))
    return out


def names_by_line(code: CodeType) -> dict[int, list[tuple[str, str]]]:
    """line -> ``(instruction, name)`` of every name the line loads or imports."""
    out: dict[int, list[tuple[str, str]]] = {}
    for ins in dis.get_instructions(code):
        op = next((base for base in _LOADS if ins.opname.startswith(base)), None)
        line = ins.positions.lineno if ins.positions is not None else None
        if op is None or line is None:
            continue
        # 3.13 fuses two fast loads into one instruction whose argument is both names
        names = ins.argval if isinstance(ins.argval, tuple) else (ins.argval,)
        out.setdefault(line, []).extend((op, n) for n in names if isinstance(n, str))
    return out


class _State:
    """Counters shared by the tracer back ends (only the traced thread updates most of them)."""

    def __init__(self, scope: Scope, watch: Iterable[CodeType] = ()) -> None:
        self.scope = scope
        self.thread = threading.get_ident()
        self.handoffs = handoff_codes()
        self.watch = frozenset(watch)  # the test's own code: its lines show reads by name
        self.depth = 0  # entry-point frames active on the traced thread
        self.entry_ran = False
        self.outside = False  # a production function ran outside every entry point's frames
        self.production_ran = False
        self.dispatched = False
        self.functions: dict[Function, None] = {}
        self.reads: dict[str, None] = {}
        self.test_lines: dict[tuple[CodeType, int], None] = {}
        self.lines: dict[str, set[int]] | None = {} if scope.lines else None
        self.label = "setup"
        self.entry_labels: dict[str, None] = {}
        self.error: str | None = None
        self.blind_threads = False  # other threads ran unobserved (sys.settrace/setprofile)
        self.on_depth: Callable[[int], None] | None = None  # told when depth enters/leaves 0
        self.blind_lines: str | None = None  # why the test's own lines cannot be seen

    def kind(self, code: CodeType) -> tuple[int, Function | None]:
        """(BORING | PRODUCTION | ENTRY | HANDOFF | BODY, the function's key), cached per code."""
        found = self.scope.codes.get(code)
        if found is None:
            if code in self.handoffs:
                found = (HANDOFF, None)
            elif self.scope.is_production(code.co_filename):
                key = (self.scope.relative(code.co_filename), code.co_qualname, code.co_firstlineno)
                if code.co_flags & _CO_OPTIMIZED:
                    found = (ENTRY if self.scope.is_entry(code) else PRODUCTION, key)
                else:
                    # A module or class body: importing runs no behaviour, but it is a read.
                    found = (BODY, key)
            else:
                found = (BORING, None)
            self.scope.codes[code] = found
        return found

    def interesting(self, code: CodeType) -> bool:
        return self.kind(code)[0] != BORING

    def started(self, code: CodeType) -> None:
        """A frame of ``code`` started or resumed on the traced thread."""
        kind, key = self.kind(code)
        if kind == HANDOFF:
            self.dispatched = True
            return
        if kind == BODY:
            self.reads[f"imported {key[0]}"] = None  # type: ignore[index]
            return
        if kind == ENTRY:
            if self.depth == 0:
                self.entry_labels[self.label] = None
                if self.on_depth is not None:
                    self.on_depth(1)
            self.depth += 1
            self.entry_ran = True
        self.production_ran = True
        if self.depth > 0:
            self.functions[key] = None  # type: ignore[index]
        else:
            self.outside = True

    def left(self, code: CodeType) -> None:
        """A frame of ``code`` returned, yielded or unwound on the traced thread."""
        if self.depth > 0 and self.kind(code)[0] == ENTRY:
            self.depth -= 1
            if self.depth == 0 and self.on_depth is not None:
                self.on_depth(0)

    def line(self, code: CodeType, line: int) -> None:
        """A line ran: the test's own (reads by name) or production code's (``lines``)."""
        if code in self.watch:
            self.test_lines[(code, line)] = None
        elif self.lines is not None:
            kind, key = self.kind(code)
            if kind in (PRODUCTION, ENTRY) and key is not None:
                self.lines.setdefault(key[0], set()).add(line)

    def opened(self, path: str) -> None:
        """The ``open`` audit event on the traced thread."""
        if self.scope.is_artifact(path):
            self.reads[f"opened {self.scope.relative(path)}"] = None

    def result(self, named: Callable[[], list[str]] | None = None) -> Observed:
        """The value, with what it rests on; ``named`` resolves the test's reads by name."""
        lines = None
        if self.lines is not None:
            lines = {f: sorted(s) for f, s in sorted(self.lines.items())}
        if self.error is not None:
            return Observed(NOT_CHECKED, f"the tracer failed: {self.error}", lines=lines)
        if self.blind_threads and not (self.entry_ran or self.dispatched or self.production_ran):
            # inert and untouched are positive answers: never on partial evidence
            return Observed(
                NOT_CHECKED,
                "other threads were running and this tracer does not see them, so no "
                "production code running there cannot be ruled out",
                lines=lines,
            )
        functions = list(self.functions)
        if self.entry_ran:
            by = None
            if "call" not in self.entry_labels:
                by = next((label for label in self.entry_labels if label != "call"), None)
            return Observed(
                GROUNDED,
                functions=functions,
                reached_outside_entry=self.outside,
                grounded_by=by,
                lines=lines,
            )
        if self.dispatched:
            return Observed(
                DISPATCHED,
                "work was handed to a thread, process or executor that is not followed",
                lines=lines,
            )
        if self.production_ran:
            return Observed(
                UNGROUNDED,
                "production code ran, but under no entry point",
                reached_outside_entry=True,
                lines=lines,
            )
        reads = list(self.reads)
        if named is not None and self.blind_lines is None:
            reads += [r for r in named() if r not in self.reads]
        if reads:
            return Observed(
                INERT,
                "the test read the production artifact and ran none of its functions",
                reached_outside_entry=False,
                reads=reads,
                lines=lines,
            )
        if self.blind_lines is not None:
            return Observed(NOT_CHECKED, f"reads cannot be seen: {self.blind_lines}", lines=lines)
        return Observed(
            UNTOUCHED,
            "the test neither ran nor read the production artifact",
            reached_outside_entry=False,
            lines=lines,
        )


# -- the audit hook: files opened during a traced test -----------------------------------------

_auditing: list[_State | None] = [None]  # the state of the test being traced, if any
_hooked: list[bool] = [False]


def _audit(event: str, args: tuple[Any, ...]) -> None:
    state = _auditing[0]
    if state is None or event != "open" or threading.get_ident() != state.thread:
        return
    path = args[0] if args else None
    if isinstance(path, bytes):
        path = os.fsdecode(path)
    if not isinstance(path, str) or not path:
        return  # a file descriptor: the file was opened (and seen) before
    try:
        where = os.path.join(os.getcwd(), path)  # noqa: PTH109, PTH118 — every open passes here
    except OSError:
        return  # the working directory is gone: a relative path names nothing we can place
    try:
        state.opened(where)
    except Exception as exc:  # a tracer bug must not fail the test
        state.error = f"{type(exc).__name__}: {exc}"


def _watch_opens(state: _State | None) -> None:
    """Point the process's one audit hook at ``state`` (None: stop counting)."""
    if not _hooked[0] and state is not None:
        sys.addaudithook(_audit)  # audit hooks cannot be removed: one per process
        _hooked[0] = True
    _auditing[0] = state


class _Base:
    """What both back ends share: the state, the label, reads by name."""

    def __init__(self, scope: Scope) -> None:
        self.scope = scope
        self.state = _State(scope)

    def label(self, where: str) -> None:
        """Where the test is now: ``"setup"``, ``"fixture <name>"`` or ``"call"``."""
        self.state.label = where

    def _finish(
        self, globals_: Mapping[str, Any] | None, arguments: Mapping[str, Any] | None
    ) -> Observed:
        _watch_opens(None)
        state = self.state
        if globals_ is None and state.blind_lines is None:
            state.blind_lines = "the test is not a Python function whose lines can be read"

        def named() -> list[str]:
            return named_reads(state.test_lines, self.scope, globals_ or {}, arguments or {})

        return state.result(named if globals_ is not None else None)


class SettraceTracer(_Base):
    """Python 3.11: ``sys.settrace`` when it is free, else ``sys.setprofile``.

    Only the traced thread is traced. With ``sys.settrace`` the test's own lines
    (reads by name) and production lines are seen; when another trace function
    holds it (coverage), calls and returns come from ``sys.setprofile`` and the
    lines are not seen.
    """

    def __init__(self, scope: Scope) -> None:
        super().__init__(scope)
        self.mode: str | None = None

    def begin(self, watch: Iterable[CodeType] = ()) -> None:
        self.state = state = _State(self.scope, watch)
        self.mode = None
        if sys.gettrace() is None:
            sys.settrace(self._global)
            self.mode = "trace"
        elif sys.getprofile() is None:
            previous = sys.gettrace()
            sys.setprofile(self._profile)
            self.mode = "profile"
            state.blind_lines = (
                "another trace function holds sys.settrace "
                f"({getattr(previous, '__qualname__', type(previous).__name__)}, e.g. coverage), "
                "so the test's own lines are not observed"
            )
        else:
            state.error = (
                "another tracer and another profiler are already active (e.g. coverage and a "
                "profiler)"
            )
            return
        state.blind_threads = threading.active_count() > 1
        _watch_opens(state)

    # sys.settrace: 'call' events here, lines and returns in the local functions
    def _global(self, frame: FrameType, event: str, arg: Any) -> Any:
        state = self.state
        code = frame.f_code
        if code in state.watch:
            return self._local
        try:
            kind = state.kind(code)[0]
            if kind == BORING:
                return None
            state.started(code)
        except Exception as exc:  # a tracer bug must not fail the test
            state.error = f"{type(exc).__name__}: {exc}"
            return None
        if kind == ENTRY or (state.lines is not None and kind == PRODUCTION):
            return self._local
        return None

    def _local(self, frame: FrameType, event: str, arg: Any) -> Any:
        if event == "line":
            self.state.line(frame.f_code, frame.f_lineno)
        elif event == "return":
            self.state.left(frame.f_code)
        return self._local

    # sys.setprofile: every call and return (C calls ignored)
    def _profile(self, frame: FrameType, event: str, arg: Any) -> None:
        state = self.state
        if event == "call":
            code = frame.f_code
            try:
                if state.kind(code)[0] != BORING:
                    state.started(code)
            except Exception as exc:  # a tracer bug must not fail the test
                state.error = f"{type(exc).__name__}: {exc}"
        elif event == "return":
            state.left(frame.f_code)

    def end(
        self, globals_: Mapping[str, Any] | None = None, arguments: Mapping[str, Any] | None = None
    ) -> Observed:
        """What the test did; ``globals_``/``arguments`` (the test function's globals and
        fixture values) name what its own lines loaded."""
        state = self.state
        if state.error is None:
            if self.mode == "trace" and sys.gettrace() != self._global:
                state.error = "the trace function was replaced while the test ran"
            if self.mode == "profile" and sys.getprofile() != self._profile:
                state.error = "the profile function was replaced while the test ran"
            state.blind_threads = state.blind_threads or threading.active_count() > 1
        if self.mode == "trace":
            sys.settrace(None)
        elif self.mode == "profile":
            sys.setprofile(None)
        self.mode = None
        return self._finish(globals_, arguments)


class MonitoringTracer(_Base):
    """``sys.monitoring`` back end (Python 3.12+): uninteresting code is disabled once.

    The tool id is held for the whole session and its events switched on only
    while a citing test runs, so code found uninteresting stays disabled. Line
    events are local to the test's own code and, when lines are asked for, to
    production code; a line is disabled once seen until the next test.

    A production function already recorded under an entry point is disabled for
    the rest of the test; a second tool id (the *watcher*) sees function starts
    only while no entry point's frame is active after one ran, so a later direct
    call of that function still shows as ``reached_outside_entry``. Without a
    free second id nothing is disabled that could still say so.
    """

    def __init__(self, scope: Scope) -> None:
        super().__init__(scope)
        self.tool: int | None = None
        self.watcher: int | None = None
        self.events = 0
        self.watch_events = 0
        self.active = False
        self.line_codes: set[CodeType] = set()  # production code with local line events

    def _acquire(self) -> str | None:
        mon = sys.monitoring  # type: ignore[attr-defined,unused-ignore]
        for tool in _TOOL_IDS:
            try:
                mon.use_tool_id(tool, TOOL_NAME)
            except ValueError:
                continue
            self.tool = tool
            break
        else:
            return "no free sys.monitoring tool id (all are in use)"
        ev = mon.events
        self.watcher = None
        for tool in _TOOL_IDS:
            if tool == self.tool:
                continue
            try:
                mon.use_tool_id(tool, TOOL_NAME)
            except ValueError:
                continue
            self.watcher = tool
            self.watch_events = ev.PY_START | ev.PY_RESUME
            mon.register_callback(tool, ev.PY_START, self._outside)
            mon.register_callback(tool, ev.PY_RESUME, self._outside)
            break
        self.events = ev.PY_START | ev.PY_RESUME | ev.PY_THROW
        self.events |= ev.PY_RETURN | ev.PY_YIELD | ev.PY_UNWIND
        for event, callback in (
            (ev.PY_START, self._start),
            (ev.PY_RESUME, self._start),
            (ev.PY_THROW, self._throw),
            (ev.PY_RETURN, self._leave),
            (ev.PY_YIELD, self._leave),
            (ev.PY_UNWIND, self._unwind),
            (ev.LINE, self._line),
        ):
            mon.register_callback(self.tool, event, callback)
        self.line_codes = set()
        return None

    def begin(self, watch: Iterable[CodeType] = ()) -> None:
        self.state = state = _State(self.scope, watch)
        mon = sys.monitoring  # type: ignore[attr-defined,unused-ignore]
        if self.tool is None or mon.get_tool(self.tool) != TOOL_NAME:
            self.tool = None
            error = self._acquire()
            if error is not None:
                state.error = error
                return
        assert self.tool is not None
        for code in state.watch:
            mon.set_local_events(self.tool, code, mon.events.LINE)
        mon.restart_events()  # what the last test disabled matters again
        mon.set_events(self.tool, self.events)
        if self.watcher is not None and mon.get_tool(self.watcher) == TOOL_NAME:
            mon.set_events(self.watcher, 0)
            state.on_depth = self._depth
        else:
            self.watcher = None
        self.active = True
        _watch_opens(state)

    def _depth(self, depth: int) -> None:
        """Watch function starts only while no entry point runs and none was seen outside."""
        state = self.state
        if self.watcher is None:
            return
        want = self.watch_events if depth == 0 and not state.outside else 0
        sys.monitoring.set_events(self.watcher, want)  # type: ignore[attr-defined,unused-ignore]

    def _outside(self, code: CodeType, offset: int) -> Any:
        state = self.state
        found = state.scope.codes.get(code)
        kind = found[0] if found is not None else state.kind(code)[0]
        if kind == BORING:
            return sys.monitoring.DISABLE  # type: ignore[attr-defined,unused-ignore]
        if kind == PRODUCTION and state.depth == 0 and threading.get_ident() == state.thread:
            state.outside = True
            self._depth(0)  # nothing more to watch for in this test
        return None

    def _start(self, code: CodeType, offset: int) -> Any:
        state = self.state
        found = state.scope.codes.get(code)  # one lookup on the hot path
        kind, key = found if found is not None else state.kind(code)
        if kind == BORING:
            return sys.monitoring.DISABLE  # type: ignore[attr-defined,unused-ignore]
        if threading.get_ident() != state.thread:
            if kind in (PRODUCTION, ENTRY):
                # Production code on another thread while the test ran: work was handed off
                # there (a queue, a pre-started worker) and is not followed.
                state.dispatched = True
            return None
        if state.lines is not None and kind in (PRODUCTION, ENTRY):
            self._lines_of(code)
        try:
            state.started(code)
        except Exception as exc:  # a tracer bug must not fail the test
            state.error = f"{type(exc).__name__}: {exc}"
            return None
        if kind == BODY or (
            kind == PRODUCTION
            and key in state.functions
            and (state.outside or self.watcher is not None)
        ):
            # Nothing more to learn from this code in this test (a body read once; a
            # function recorded under an entry point, while the watcher sees a later call
            # outside one): stop paying for its calls until the next test.
            return sys.monitoring.DISABLE  # type: ignore[attr-defined,unused-ignore]
        return None

    def _lines_of(self, code: CodeType) -> None:
        if code not in self.line_codes and self.tool is not None:
            self.line_codes.add(code)
            mon = sys.monitoring  # type: ignore[attr-defined,unused-ignore]
            mon.set_local_events(self.tool, code, mon.events.LINE)

    def _line(self, code: CodeType, line: int) -> Any:
        state = self.state
        if not self.active:
            return sys.monitoring.DISABLE  # type: ignore[attr-defined,unused-ignore]
        if threading.get_ident() != state.thread:
            return None
        state.line(code, line)
        return sys.monitoring.DISABLE  # type: ignore[attr-defined,unused-ignore]

    def _throw(self, code: CodeType, offset: int, exc: BaseException) -> Any:
        state = self.state
        if threading.get_ident() == state.thread and state.interesting(code):
            state.started(code)
        return None

    def _leave(self, code: CodeType, offset: int, value: object) -> Any:
        state = self.state
        if state.kind(code)[0] != ENTRY:
            return sys.monitoring.DISABLE  # type: ignore[attr-defined,unused-ignore]
        if threading.get_ident() == state.thread:
            state.left(code)
        return None

    def _unwind(self, code: CodeType, offset: int, exc: BaseException) -> Any:
        state = self.state
        if state.depth and threading.get_ident() == state.thread:
            state.left(code)
        return None

    def end(
        self, globals_: Mapping[str, Any] | None = None, arguments: Mapping[str, Any] | None = None
    ) -> Observed:
        """As :meth:`SettraceTracer.end`."""
        state = self.state
        self.active = False
        if self.tool is None:
            return self._finish(globals_, arguments)
        mon = sys.monitoring  # type: ignore[attr-defined,unused-ignore]
        try:
            if mon.get_tool(self.tool) != TOOL_NAME or mon.get_events(self.tool) != self.events:
                if state.error is None:
                    state.error = "the monitoring tool was changed while the test ran"
                self.tool = None
            else:
                mon.set_events(self.tool, 0)
                for code in state.watch:
                    mon.set_local_events(self.tool, code, 0)
            if self.watcher is not None:
                if mon.get_tool(self.watcher) != TOOL_NAME:
                    state.error = (
                        state.error or "the monitoring tool was changed while the test ran"
                    )
                    self.watcher = None
                else:
                    mon.set_events(self.watcher, 0)
        except ValueError as exc:
            state.error = state.error or f"sys.monitoring: {exc}"
            self.tool = None
        return self._finish(globals_, arguments)


Tracer = SettraceTracer | MonitoringTracer


def make(scope: Scope) -> Tracer:
    """The back end this interpreter has: sys.monitoring on 3.12+, sys.settrace before."""
    if sys.version_info >= (3, 12) and hasattr(sys, "monitoring"):
        return MonitoringTracer(scope)
    return SettraceTracer(scope)


# -- reads by name: what the test's own lines loaded ---------------------------------------------


def production_object(value: object, scope: Scope) -> str | None:
    """``"module shop.api"``-like words when ``value`` comes from the production artifact."""
    if isinstance(value, types.ModuleType):
        file = getattr(value, "__file__", None)
        if isinstance(file, str) and scope.is_artifact(file):
            return f"module {value.__name__}"
        return None
    target: Any = value
    if not isinstance(
        value, type | types.FunctionType | types.MethodType | types.BuiltinFunctionType
    ):
        target = type(value)  # an instance: its class says where it comes from
    func = getattr(target, "__func__", target)
    code = getattr(func, "__code__", None)
    if isinstance(code, CodeType):
        if scope.is_production(code.co_filename):
            return f"{func.__module__}.{func.__qualname__}"
        return None
    module = sys.modules.get(str(getattr(target, "__module__", "") or ""))
    file = getattr(module, "__file__", None) if module is not None else None
    if isinstance(file, str) and scope.is_artifact(file):
        return f"{target.__module__}.{getattr(target, '__qualname__', type(target).__name__)}"
    return None


def named_reads(
    ran: Iterable[tuple[CodeType, int]],
    scope: Scope,
    globals_: Mapping[str, Any],
    arguments: Mapping[str, Any],
) -> list[str]:
    """Production objects the test's executed lines loaded by name (globals, its arguments)."""
    out: dict[str, None] = {}
    tables: dict[CodeType, dict[int, list[tuple[str, str]]]] = {}
    for code, line in ran:
        table = tables.get(code)
        if table is None:
            table = tables[code] = names_by_line(code)
        for op, name in table.get(line, ()):
            if op == "IMPORT_NAME":
                value: Any = sys.modules.get(name)
            elif op == "LOAD_FAST":
                if name not in arguments:
                    continue
                value = arguments[name]
            elif name in globals_:
                value = globals_[name]
            else:
                continue
            try:
                what = production_object(value, scope) if value is not None else None
            except Exception:  # an object with odd attributes is not a read we can name
                what = None
            if what is not None:
                out[f"referenced {what}"] = None
    return list(out)

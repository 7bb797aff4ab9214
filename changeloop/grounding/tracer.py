"""Trace one test's call tree and say whether it ran production code under an entry point.

Standard library only, on purpose: the pytest plugin runs inside a project's
own interpreter, where changeloop is not installed, so the test-discovery
adapter copies this file next to the plugin as ``changeloop_grounding.py``.

Example::

    scope = Scope(root, production=is_production, entries={(file, "create_app")})
    tracer = make(scope)           # sys.monitoring on 3.12+, sys.settrace on 3.11
    tracer.begin()
    ...                            # the test's setup and call run here
    observed = tracer.end()
    observed.grounding   # grounded | ungrounded | inert | dispatched | not-checked

Rules (DESIGN.md §11, §13): ``grounded`` — an entry point ran, and with it
production code (the entry point is production code itself); ``dispatched`` —
no entry point ran and a hand-off to a thread, process or executor was seen
(what runs there is not followed); ``ungrounded`` — production code ran under
no entry point; ``inert`` — no production code ran. Any doubt about the trace
itself (another tracer active or installed mid-test, no free monitoring tool
id, an error inside the tracer) gives ``not-checked`` with why: a positive
answer is never given on partial evidence.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from types import CodeType, FrameType
from typing import Any

GROUNDED = "grounded"
UNGROUNDED = "ungrounded"
INERT = "inert"
DISPATCHED = "dispatched"
NOT_CHECKED = "not-checked"
VALUES = (GROUNDED, UNGROUNDED, INERT, DISPATCHED, NOT_CHECKED)
TOOL_NAME = "changeloop-grounding"
# Free sys.monitoring ids first: 0 debugger, 1 coverage, 2 profiler, 5 optimizer.
_TOOL_IDS = (3, 4, 2)

BORING, PRODUCTION, ENTRY, HANDOFF = 0, 1, 2, 3
_CO_OPTIMIZED = 0x1  # set on function code, not on module or class bodies
Function = tuple[str, str, int]  # (file relative to the root, qualname, first line)


@dataclass
class Scope:
    """What counts as production code and which functions are entry points.

    ``production(path)`` receives a real path; ``entries`` holds
    ``(real path, qualname)`` pairs.
    """

    root: str
    production: Callable[[str], bool]
    entries: frozenset[tuple[str, str]]
    _kinds: dict[str, bool] = field(default_factory=dict)
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


def handoff_codes() -> frozenset[CodeType]:
    """Code objects whose start means work leaves the traced thread."""
    import asyncio.base_events
    import concurrent.futures
    import multiprocessing.process
    import subprocess

    funcs: list[Any] = [
        threading.Thread.start,
        concurrent.futures.ThreadPoolExecutor.submit,
        concurrent.futures.ProcessPoolExecutor.submit,
        asyncio.base_events.BaseEventLoop.run_in_executor,
        multiprocessing.process.BaseProcess.start,
        subprocess.Popen.__init__,  # a child process is not followed either
    ]
    return frozenset(f.__code__ for f in funcs if hasattr(f, "__code__"))


class _State:
    """Counters shared by both tracer back ends (only the traced thread updates them)."""

    def __init__(self, scope: Scope) -> None:
        self.scope = scope
        self.thread = threading.get_ident()
        self.handoffs = handoff_codes()
        self.depth = 0  # entry-point frames active on the traced thread
        self.entry_ran = False
        self.production_ran = False
        self.dispatched = False
        self.functions: dict[Function, None] = {}
        self.error: str | None = None
        self.blind_threads = False  # other threads ran unobserved (sys.settrace)

    def kind(self, code: CodeType) -> tuple[int, Function | None]:
        """(BORING | PRODUCTION | ENTRY | HANDOFF, the function's key), cached per code object."""
        found = self.scope.codes.get(code)
        if found is None:
            if code in self.handoffs:
                found = (HANDOFF, None)
            elif code.co_flags & _CO_OPTIMIZED and self.scope.is_production(code.co_filename):
                # Only functions count: importing a module or defining a class runs no behaviour.
                key = (self.scope.relative(code.co_filename), code.co_qualname, code.co_firstlineno)
                found = (ENTRY if self.scope.is_entry(code) else PRODUCTION, key)
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
        if kind == ENTRY:
            self.depth += 1
            self.entry_ran = True
        if self.depth > 0:
            self.functions[key] = None  # type: ignore[index]
        else:
            self.production_ran = True

    def left(self, code: CodeType) -> None:
        """A frame of ``code`` returned, yielded or unwound on the traced thread."""
        if self.depth > 0 and self.kind(code)[0] == ENTRY:
            self.depth -= 1

    def result(self) -> Observed:
        if self.error is not None:
            return Observed(NOT_CHECKED, f"the tracer failed: {self.error}")
        if self.blind_threads and not (self.entry_ran or self.dispatched or self.production_ran):
            # inert is a positive answer: never on partial evidence (DESIGN.md §11)
            return Observed(
                NOT_CHECKED,
                "other threads were running and sys.settrace does not see them, so no "
                "production code running there cannot be ruled out",
            )
        functions = list(self.functions)
        if self.entry_ran:
            return Observed(GROUNDED, functions=functions)
        if self.dispatched:
            return Observed(
                DISPATCHED, "work was handed to a thread, process or executor that is not followed"
            )
        if self.production_ran:
            return Observed(UNGROUNDED, "production code ran, but under no entry point")
        return Observed(INERT, "no production code ran")


class SettraceTracer:
    """``sys.settrace`` back end (Python 3.11): only the traced thread is traced."""

    def __init__(self, scope: Scope) -> None:
        self.scope = scope
        self.state = _State(scope)

    def begin(self) -> None:
        self.state = state = _State(self.scope)
        previous = sys.gettrace()
        if previous is not None:
            state.error = (
                f"another tracer is already active ({getattr(previous, '__qualname__', previous)!r}"
                ", e.g. coverage or a debugger)"
            )
            return
        sys.settrace(self._global)
        state.blind_threads = threading.active_count() > 1

    def _global(self, frame: FrameType, event: str, arg: Any) -> Any:
        state = self.state
        code = frame.f_code
        try:
            kind = state.kind(code)[0]
            if kind == BORING:
                return None
            state.started(code)
        except Exception as exc:  # a tracer bug must not fail the test
            state.error = f"{type(exc).__name__}: {exc}"
            return None
        return self._local if kind == ENTRY else None

    def _local(self, frame: FrameType, event: str, arg: Any) -> Any:
        if event == "return":
            self.state.left(frame.f_code)
        return self._local

    def end(self) -> Observed:
        state = self.state
        if state.error is None:
            if sys.gettrace() != self._global:
                state.error = "the trace function was replaced while the test ran"
            sys.settrace(None)
            state.blind_threads = state.blind_threads or threading.active_count() > 1
        return state.result()


class MonitoringTracer:
    """``sys.monitoring`` back end (Python 3.12+): uninteresting code is disabled once.

    The tool id is held for the whole session and its events switched on only
    while a citing test runs, so code found uninteresting stays disabled.
    """

    def __init__(self, scope: Scope) -> None:
        self.scope = scope
        self.state = _State(scope)
        self.tool: int | None = None
        self.events = 0

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
        self.events = ev.PY_START | ev.PY_RESUME | ev.PY_THROW
        self.events |= ev.PY_RETURN | ev.PY_YIELD | ev.PY_UNWIND
        for event, callback in (
            (ev.PY_START, self._start),
            (ev.PY_RESUME, self._start),
            (ev.PY_THROW, self._throw),
            (ev.PY_RETURN, self._leave),
            (ev.PY_YIELD, self._leave),
            (ev.PY_UNWIND, self._unwind),
        ):
            mon.register_callback(self.tool, event, callback)
        return None

    def begin(self) -> None:
        self.state = state = _State(self.scope)
        mon = sys.monitoring  # type: ignore[attr-defined,unused-ignore]
        if self.tool is None or mon.get_tool(self.tool) != TOOL_NAME:
            self.tool = None
            error = self._acquire()
            if error is not None:
                state.error = error
                return
        assert self.tool is not None
        mon.restart_events()  # what the last test disabled matters again
        mon.set_events(self.tool, self.events)

    def _start(self, code: CodeType, offset: int) -> Any:
        state = self.state
        if not state.interesting(code):
            return sys.monitoring.DISABLE  # type: ignore[attr-defined,unused-ignore]
        if threading.get_ident() == state.thread:
            try:
                state.started(code)
            except Exception as exc:  # a tracer bug must not fail the test
                state.error = f"{type(exc).__name__}: {exc}"
                return None
            kind, key = state.kind(code)
            if kind == PRODUCTION and state.entry_ran and key in state.functions:
                # Nothing more to learn from this function in this test (grounded already,
                # its key recorded): stop paying for its calls until the next test.
                return sys.monitoring.DISABLE  # type: ignore[attr-defined,unused-ignore]
        elif state.kind(code)[0] in (PRODUCTION, ENTRY):
            # Production code on another thread while the test ran: work was handed off
            # there (a queue, a pre-started worker) and is not followed.
            state.dispatched = True
        return None

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

    def end(self) -> Observed:
        state = self.state
        if self.tool is None:
            return state.result()
        mon = sys.monitoring  # type: ignore[attr-defined,unused-ignore]
        try:
            if mon.get_tool(self.tool) != TOOL_NAME or mon.get_events(self.tool) != self.events:
                if state.error is None:
                    state.error = "the monitoring tool was changed while the test ran"
                self.tool = None
            else:
                mon.set_events(self.tool, 0)
        except ValueError as exc:
            state.error = state.error or f"sys.monitoring: {exc}"
            self.tool = None
        return state.result()


Tracer = SettraceTracer | MonitoringTracer


def make(scope: Scope) -> Tracer:
    """The back end this interpreter has: sys.monitoring on 3.12+, sys.settrace before."""
    if sys.version_info >= (3, 12) and hasattr(sys, "monitoring"):
        return MonitoringTracer(scope)
    return SettraceTracer(scope)

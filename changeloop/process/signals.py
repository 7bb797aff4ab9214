"""The signal layer: SIGINT/SIGTERM/SIGHUP from the CLI's first moment, then as cancellation.

Two parts, one module. :data:`SIGNALS` is installed by the CLI before anything
heavy is imported: until the error boundary arms it a signal is only recorded
(raising inside an import would print a traceback); armed, the first one raises
``KeyboardInterrupt``, which the boundary answers with exit 130.
:func:`cancel_on_signals` takes over while a run's event loop is alive and turns
a signal into cancellation of the work instead.

Ctrl-C must end every running process group and write nothing for unfinished
work (docs/scheduling.md); cancellation does exactly that, because every awaiting
piece of the engine cleans up in a shielded scope and re-raises. The CLI then
exits 130.

    async with cancel_on_signals() as stop:
        await engine.prove(...)          # cancelled on the first SIGINT/SIGTERM/SIGHUP
    if stop.signum is not None:
        return stop.exit_code           # 130

The hook stays in place until the cleanup has finished, so a
second Ctrl-C during cleanup is recorded instead of raising KeyboardInterrupt
in the middle of ending process groups (cleanup is bounded by the grace
period followed by SIGKILL). Must be used in the main thread.
"""

from __future__ import annotations

import _thread
import sys

TYPE_CHECKING = False  # typing is imported after the CLI's handlers are in place
if TYPE_CHECKING:
    import signal as _signal
    import socket
    from collections.abc import Callable
    from types import FrameType
else:
    import _signal  # the C module: ``signal`` builds its enums first (milliseconds more)

EXIT_INTERRUPTED = 130
# SIGHUP is the terminal closing: a run ends as it does on SIGTERM.
HANDLED = (_signal.SIGINT, _signal.SIGTERM, _signal.SIGHUP)


class Signals:
    """SIGINT/SIGTERM/SIGHUP → one ``KeyboardInterrupt`` while armed; otherwise only recorded."""

    def __init__(self) -> None:
        self.received: list[int] = []
        self.armed = False
        self.raised = False
        self.installed = False
        self.previous: dict[int, object] = {}
        self.previous_unraisable: Callable[[sys.UnraisableHookArgs], object] | None = None
        # set while a run's event loop is alive: the signal becomes that run's cancellation
        self.hook: Callable[[int], None] | None = None

    def handler(self, signum: int, frame: FrameType | None) -> None:  # noqa: ARG002 (signal handler signature)
        self.received.append(signum)
        if self.hook is not None:
            self.hook(signum)
        elif self.armed and not self.raised:
            self.raised = True
            raise KeyboardInterrupt

    def install(self) -> bool:
        """Install in the main thread; True when this call installed them."""
        if self.installed:
            return False
        try:
            for sig in HANDLED:
                self.previous[sig] = _signal.signal(sig, self.handler)
        except ValueError:  # not the main thread: the caller owns signals
            self.restore()
            return False
        self.installed = True
        self.previous_unraisable, sys.unraisablehook = sys.unraisablehook, self.unraisable
        return True

    def restore(self) -> None:
        for sig, previous in self.previous.items():
            _signal.signal(sig, previous if previous is not None else _signal.SIG_DFL)  # type: ignore[arg-type]
        self.previous.clear()
        if self.previous_unraisable is not None:
            sys.unraisablehook, self.previous_unraisable = self.previous_unraisable, None
        self.installed = False

    def unraisable(self, args: sys.UnraisableHookArgs) -> None:
        """Our ``KeyboardInterrupt``, raised where Python cannot pass it on (a weakref callback
        such as an import lock's, a ``__del__``), is raised again in the main thread's next
        instruction instead of being printed as "Exception ignored" and lost."""
        if self.raised and args.exc_type is KeyboardInterrupt and self.received:
            self.raised = False
            # from another thread: a handler run inside this hook would be unraisable too
            _thread.start_new_thread(_interrupt_main, (self.received[-1],))
            return
        (self.previous_unraisable or sys.__unraisablehook__)(args)

    def arm(self) -> None:
        """From now on a signal interrupts; one that came earlier interrupts right away."""
        self.raised = False
        self.armed = True
        if self.received:
            self.raised = True
            raise KeyboardInterrupt

    def disarm(self) -> None:
        self.armed = False


SIGNALS = Signals()


def _interrupt_main(signum: int) -> None:
    """The main thread runs ``signum``'s handler at its next instruction."""
    _thread.interrupt_main(signum)  # type: ignore[arg-type] # typeshed asks for signal.Signals, an int


# -- a run's cancellation: imported with the module, used once a run's event loop is alive
from collections.abc import AsyncIterator  # noqa: E402
from contextlib import asynccontextmanager  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402


@dataclass
class Interruption:
    """What the watcher saw: the first signal, and every signal received."""

    signum: int | None = None
    received: list[int] = field(default_factory=list)

    @property
    def interrupted(self) -> bool:
        return self.signum is not None

    @property
    def exit_code(self) -> int | None:
        """130 once interrupted (the shell convention for SIGINT), else None."""
        return EXIT_INTERRUPTED if self.signum is not None else None


@asynccontextmanager
async def cancel_on_signals() -> AsyncIterator[Interruption]:
    """Run the body; on the first SIGINT/SIGTERM/SIGHUP cancel it and record the signal.

    The signal stays with :data:`SIGNALS`' handler for the whole run (a hook turns it
    into the cancellation), never with the event loop's own signal handling: a signal
    the loop took in its last iteration was dropped with the loop's handler, and the
    run answered 0. Every signal is also in ``SIGNALS.received``, which the CLI's exit
    reads.
    """
    import asyncio  # noqa: PLC0415 - the signal layer imports nothing heavy before its handlers
    import signal  # noqa: PLC0415 - the signal layer imports nothing heavy before its handlers
    import socket  # noqa: PLC0415 - the signal layer imports nothing heavy before its handlers

    import anyio  # noqa: PLC0415 - the signal layer imports nothing heavy before its handlers

    loop = asyncio.get_running_loop()
    state = Interruption()
    installed = SIGNALS.install()  # the CLI installed it already; a library caller did not
    # the C handler writes to this socket, so a loop asleep in its selector wakes up and
    # the main thread runs SIGNALS' handler even when another thread took the signal
    wake, woken = socket.socketpair()
    for end in (wake, woken):
        end.setblocking(False)
    before = signal.set_wakeup_fd(woken.fileno(), warn_on_full_buffer=False)
    loop.add_reader(wake.fileno(), _drain, wake)
    try:
        with anyio.CancelScope() as work:

            def cancel(signum: int) -> None:  # in the main thread, between two bytecodes
                state.received.append(signum)
                if state.signum is None:
                    state.signum = signum
                    loop.call_soon_threadsafe(work.cancel)  # the loop's own queue: safe here

            SIGNALS.hook = cancel
            yield state
    finally:
        SIGNALS.hook = None
        loop.remove_reader(wake.fileno())
        signal.set_wakeup_fd(before)
        wake.close()
        woken.close()
        if installed:
            SIGNALS.restore()


def _drain(wake: socket.socket) -> None:
    """Empty the wake-up socket (the signal itself is SIGNALS' handler's to record)."""
    try:
        while wake.recv(512):
            pass
    except (BlockingIOError, OSError):
        return

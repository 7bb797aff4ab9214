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

The watcher keeps the handlers installed until the cleanup has finished, so a
second Ctrl-C during cleanup is recorded instead of raising KeyboardInterrupt
in the middle of ending process groups (cleanup is bounded by the grace
period followed by SIGKILL). Must be used in the main thread.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing is imported after the CLI's handlers are in place
if TYPE_CHECKING:
    import signal as _signal
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

    def handler(self, signum: int, frame: FrameType | None) -> None:  # noqa: ARG002 (signal handler signature)
        self.received.append(signum)
        if self.armed and not self.raised:
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
        return True

    def restore(self) -> None:
        for sig, previous in self.previous.items():
            _signal.signal(sig, previous if previous is not None else _signal.SIG_DFL)  # type: ignore[arg-type]
        self.previous.clear()
        self.installed = False

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

# -- a run's cancellation: imported with the module, used once a run's event loop is alive
import signal  # noqa: E402
from collections.abc import AsyncIterator, Sequence  # noqa: E402
from contextlib import asynccontextmanager  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402

if TYPE_CHECKING:  # anyio is imported where a run starts, not by the CLI's first moment
    import anyio
    import anyio.abc


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


async def _watch(
    work: anyio.CancelScope,
    state: Interruption,
    signals: Sequence[signal.Signals],
    *,
    task_status: anyio.abc.TaskStatus[None],
) -> None:
    import anyio

    with anyio.open_signal_receiver(*signals) as receiver:
        task_status.started()
        async for signum in receiver:
            state.received.append(signum)
            if state.signum is None:
                state.signum = signum
                work.cancel()


@asynccontextmanager
async def cancel_on_signals(
    signals: Sequence[signal.Signals] = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP),
) -> AsyncIterator[Interruption]:
    """Run the body; on the first of ``signals`` cancel it and record the signal.

    The handlers in place before (the CLI's, installed at its first moment) are
    put back afterwards: the event loop would otherwise leave SIGTERM at its
    default, and a SIGTERM while the answer is printed would kill the process.
    """
    import anyio

    state = Interruption()
    before = {sig: signal.getsignal(sig) for sig in signals}
    try:
        async with anyio.create_task_group() as tg:
            with anyio.CancelScope() as work:
                await tg.start(_watch, work, state, signals)
                yield state
            tg.cancel_scope.cancel()
    finally:
        for sig, handler in before.items():
            if handler is not None:
                signal.signal(sig, handler)

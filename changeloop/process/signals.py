"""Turn SIGINT/SIGTERM/SIGHUP into cancellation of the work, and remember that it happened.

Ctrl-C must end every running process group and write nothing for unfinished
work (DESIGN.md §4); cancellation does exactly that, because every awaiting
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

import signal
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import anyio
import anyio.abc

EXIT_INTERRUPTED = 130


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
    task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
) -> None:
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

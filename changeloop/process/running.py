"""``RunningProcess``: a started command, its output pumped to its log files, ended as a group.

The command leads a session of its own, so its pid is its process group's id:
ending it (TERM, grace, KILL) ends whatever it left in the group. Its exit is
awaited on a pidfd and its pipes are read by event-loop reader callbacks from
the moment it starts. A group still running after :data:`RECORD_AFTER_S` is
recorded for a later sweep (``process_groups.record_group``) until it ends.
``processes.py`` starts one (``start_process`` for a service) or runs one to
completion (``run_process``).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Sequence
from pathlib import Path

import anyio

from changeloop.process.groups import end_group, forget_group, record_group
from changeloop.process.output import Output
from changeloop.process.spawn import Child

__all__ = ["DRAIN_S", "RECORD_AFTER_S", "RunningProcess"]

# How long we keep reading after the group is gone: a descendant that left the
# group (``setsid()``) may hold the output pipe open forever.
DRAIN_S = 2.0
# A group is recorded for the sweep once it has run this long; most commands are over
# sooner and cost no record file at all.
RECORD_AFTER_S = 0.05


class RunningProcess:
    """A started command whose output is being pumped to its log files.

    Used directly for long-running services (``start_process``) and internally
    by :func:`run_process`; both end the whole group the same way. Exit is
    awaited on a pidfd and the pipes are read by event-loop reader callbacks
    from the moment the command starts: no asyncio transports, no
    child-watcher thread, no task per pipe (bench/README.md "Scheduler").
    """

    def __init__(
        self,
        child: Child,
        fds: tuple[int, int],
        output: Output,
        argv: Sequence[str],
        run_dir: Path | None = None,
    ) -> None:
        self._child = child
        self._run_dir = run_dir
        self._record: Path | None = None  # .changeloop/runs/<id>/pgroups/<pgid>.json
        self.output = output
        self.argv = tuple(argv)
        self.pid = child.pid  # == the process group id (a session of its own)
        self.log_path = output.log_path
        self.stdout_path = output.stdout_path
        self._loop = asyncio.get_running_loop()
        self._open: dict[int, str] = {}  # pipe fd -> stream name, until its end is read
        self._drained = asyncio.Event()
        # Futures of those waiting for the main child's exit: True when it exited, False
        # when a wait's time limit came first. One pidfd reader serves them all.
        self._waiters: list[asyncio.Future[bool]] = []
        self._watching = False  # the pidfd reader is registered
        self._exited = False  # the pidfd said so: the main child is a zombie or reaped
        self.write_error: OSError | None = None  # the log could not be written
        try:
            self._pidfd: int | None = os.pidfd_open(child.pid)
        except (AttributeError, OSError):  # pragma: no cover - not Linux ≥ 5.3
            self._pidfd = None
        for fd, name in zip(fds, ("stdout", "stderr"), strict=True):
            self._open[fd] = name
            self._loop.add_reader(fd, self._readable, fd)
        # One timer for both things that happen at a time: the group's record once it has
        # run RECORD_AFTER_S (most commands are over by then and need none), and the end
        # of a wait's time limit. It is set for whichever comes first (see _arm).
        self._timer: asyncio.TimerHandle | None = None
        self._record_at: float | None = None
        self._limit: tuple[float, asyncio.Future[bool]] | None = None
        if run_dir is not None:
            self._record_at = self._loop.time() + RECORD_AFTER_S
            self._timer = self._loop.call_at(self._record_at, self._on_timer)

    @property
    def returncode(self) -> int | None:
        return self._child.returncode

    async def wait(self) -> int:
        """Wait for the main child to exit (and reap it); its group may still hold members."""
        if self._child.returncode is None:
            if self._pidfd is not None:
                if not self._exited:
                    await self._exit_waiter()
            else:  # pragma: no cover
                delay = 0.001
                while self._child.poll() is None:
                    await anyio.sleep(delay)
                    delay = min(delay * 2, 0.05)
        return self._child.wait()

    async def wait_for(self, timeout_s: float) -> bool:
        """Wait at most ``timeout_s`` for the main child to exit; True (and reaped) if it did.

        The same as ``wait()`` under ``anyio.move_on_after(timeout_s)``, without a cancel
        scope per command: the limit resolves this wait's own future instead of
        cancelling the task. Outside cancellation reaches it as it reaches any await.
        """
        if self._child.returncode is None and self._pidfd is not None and not self._exited:
            waiter = self._exit_waiter()
            self._limit = (self._loop.time() + timeout_s, waiter)
            self._arm()
            try:
                if not await waiter:
                    return False
            finally:
                self._limit = None
        elif self._pidfd is None:  # pragma: no cover - not Linux ≥ 5.3
            with anyio.move_on_after(timeout_s):
                await self.wait()
            if self._child.returncode is None:
                return False
        self._child.wait()
        return True

    async def terminate(self, grace_s: float = 5.0) -> int:
        """End the whole group (TERM, grace, KILL), finish the logs, return the exit code.

        Shielded: ending a group is cleanup that must finish even when the
        caller is being cancelled.
        """
        with anyio.CancelScope(shield=True):
            await end_group(self.pid, grace_s)
            code = await self.wait()
            await self._finish_output()
            self._forget()
        return code

    def close_if_done(self) -> bool:
        """Finish the logs now if nothing is left to wait for; False: ``terminate`` must.

        For a group already ended whose main child was reaped and whose pipes reached
        their end (most commands): ``terminate`` would only repeat the group's end and
        enter a shielded scope to await nothing.
        """
        if self._open or self._child.returncode is None:
            return False
        self._close_pidfd()
        self.output.close()
        self._forget()
        return True

    def tail(self, stream: str = "log") -> str:
        """Bounded redacted tail of ``log`` (interleaved), ``stdout`` or ``stderr``."""
        return self.output.tails[stream].text()

    def _exit_waiter(self) -> asyncio.Future[bool]:
        """A future resolved True at the main child's exit; the first one adds the pidfd reader."""
        waiter: asyncio.Future[bool] = self._loop.create_future()
        if not self._watching:
            assert self._pidfd is not None
            self._watching = True
            self._loop.add_reader(self._pidfd, self._on_exit)
        # a cancelled waiter's future is done: dropped here, skipped by _on_exit
        self._waiters = [w for w in self._waiters if not w.done()]
        self._waiters.append(waiter)
        return waiter

    def _arm(self) -> None:
        """Set the timer for the earliest of the record and the time limit, if any."""
        due = [t for t in (self._record_at, self._limit and self._limit[0]) if t is not None]
        if not due:
            return
        when = min(due)
        if self._timer is not None:
            if self._timer.when() <= when:
                return
            self._timer.cancel()
        self._timer = self._loop.call_at(when, self._on_timer)

    def _on_timer(self) -> None:
        """Whatever was due at the timer's time: the record, the time limit; then re-arm."""
        assert self._timer is not None
        now, self._timer = self._timer.when(), None
        if self._record_at is not None and self._record_at <= now:
            self._record_at = None
            self._record_now()
        if self._limit is not None and self._limit[0] <= now:
            waiter = self._limit[1]
            self._limit = None
            if not waiter.done():
                waiter.set_result(False)
        self._arm()

    def _record_now(self) -> None:
        """Record the group for a later sweep (process_groups.record_group).

        Only while its leader is unreaped: a reaped pid may belong to another
        process by now, and a record naming it could get that one killed.
        """
        if self._run_dir is not None and self._child.returncode is None:
            self._record = record_group(self._run_dir, self.pid, self.argv)

    def _forget(self) -> None:
        self._record_at = self._limit = None
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        forget_group(self._record)
        self._record = None

    def _readable(self, fd: int) -> None:
        try:
            data = os.read(fd, 65536)
        except BlockingIOError:
            return
        except OSError:  # the pipe broke: nothing more will come
            data = b""
        if not data:
            self._close(fd)
        elif self.write_error is None:  # after a failed write the pipe is still drained
            try:
                self.output.write(self._open[fd], data)
            except OSError as exc:  # a full disk: run_process raises it once the group ended
                self.write_error = exc

    def _close(self, fd: int) -> None:
        self._loop.remove_reader(fd)
        os.close(fd)
        del self._open[fd]
        if not self._open:
            self._drained.set()

    def _on_exit(self) -> None:
        assert self._pidfd is not None
        self._loop.remove_reader(self._pidfd)
        self._watching, self._exited = False, True
        waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(True)

    def _close_pidfd(self) -> None:
        if self._pidfd is None:
            return
        if self._watching:  # nobody's wait saw the exit: the waiters end with the process
            self._loop.remove_reader(self._pidfd)
            self._watching = False
            for waiter in self._waiters:
                waiter.cancel()
            self._waiters = []
        os.close(self._pidfd)
        self._pidfd = None

    async def _pump_all(self) -> None:
        """Until both pipes reached their end (the readers run on their own)."""
        await self._drained.wait()

    async def _finish_output(self) -> None:
        """Read to EOF (bounded by DRAIN_S), then close the log files."""
        if self._open:
            with anyio.move_on_after(DRAIN_S):
                await self._drained.wait()
        if self._open:
            for fd in list(self._open):
                self._close(fd)
            self.output.note(
                f"stopped reading output after {DRAIN_S:g}s: a process outside the group"
                " still holds it open"
            )
        self._close_pidfd()
        self.output.close()

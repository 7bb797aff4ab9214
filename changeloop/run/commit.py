"""Group commit: the writer's files written off the event loop, many providers per fsync round.

The writer hands each provider's files (run directory, ``latest/``, cache entry)
to :meth:`GroupCommit.submit` and goes on; one worker thread takes whatever has
queued up and writes it as one batch with :func:`changeloop.fsio.commit` (write
all, fsync all, rename all, fsync each directory once — docs/design.md). While
it waits on the disk the next processes run, and the groups that queue up
meanwhile share the next round's fsyncs: a round with a file to fsync waits up
to :data:`BATCH_S` for company after its first group (a kill -9 in that window
loses what a kill a moment earlier would have: receipts of providers that had
not been written). A round with nothing to fsync (a reused receipt's copies) has
nothing to share and goes at once, and so does every round once the engine says
no provider that runs is left (:meth:`GroupCommit.hurry`).

Nothing reads as written before its round is done: a kill -9 at any instant
leaves each name with its old file or its new one, never half of one, and
temporary files that name this process (swept by the next ``prove``). The run's
end, and its cancellation, wait for the last round (:meth:`wait`, or :meth:`settled`
on the event loop: no thread needed to wait, and cancellable).

A writer thread that cannot start (a process or thread limit: ``ulimit -u``, a
cgroup's ``pids.max``) fails the groups it was to write, named
:data:`NO_THREAD`; nothing waits for a round that will never come.

    commits = GroupCommit()
    commits.submit("unit", [Pending(run_path, envelope), Pending(latest, envelope)])
    failures = commits.wait()      # [(tag, OSError)] of the groups that could not be written
    failures = await commits.settled()   # the same, awaited on the event loop
    commits.close()
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from changeloop.errors import NO_THREAD
from changeloop.fsio import Pending, commit

__all__ = ["BATCH_GROUPS", "BATCH_S", "IDLE_S", "NO_THREAD", "GroupCommit"]

BATCH_S = 0.05  # how long a round may wait for more groups after its first one
BATCH_GROUPS = 256  # ... or until this many are queued
IDLE_S = 1.0  # the writer thread ends after this long without work (no thread left per run)


@dataclass(frozen=True)
class _Group:
    tag: str
    files: tuple[Pending, ...]


class GroupCommit:
    """One writer thread per run; groups are committed in the order they were submitted."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._queue: list[_Group] = []
        self._durable = False  # a queued group holds a file to fsync: its round waits for company
        self._hurried = False  # no company is coming (hurry): every round goes at once
        self._pending = 0  # submitted and not yet committed
        self._failed: list[tuple[str, OSError]] = []
        self._made: set[str] = set()  # directories known to exist (touched by the thread only)
        self._thread: threading.Thread | None = None
        self._closed = False
        self._waiting = 0  # callers blocked in wait(): the next round goes at once
        self._wakers: list[Callable[[], None]] = []  # settled() callers, told when nothing is due
        self.rounds = 0  # batches written (for tests and the bench)

    def submit(self, tag: str, files: Sequence[Pending]) -> None:
        """Queue one group of files; ``tag`` names it in :meth:`wait`'s failures."""
        if not files:
            return
        with self._cond:
            if self._closed:
                raise RuntimeError("group commit already closed")
            self._queue.append(_Group(tag, tuple(files)))
            self._durable = self._durable or any(f.durable for f in files)
            self._pending += 1
            if self._thread is None:
                # A daemon: if the process dies without wait(), what is left is what a
                # kill -9 leaves (old or new files, temporaries swept later).
                self._thread = threading.Thread(
                    target=self._work, name="changeloop-commit", daemon=True
                )
                try:
                    self._thread.start()
                except RuntimeError:  # no thread or process left: what was queued fails now
                    self._thread = None
                    self._fail_queued(OSError(NO_THREAD))
                    return
            # Wake the writer only when it waits for a first group or a round is full: while
            # a round fills it sleeps until its deadline anyway, and a wake-up per provider
            # cost the event loop a futex round trip and the writer the GIL each time.
            if len(self._queue) == 1 or len(self._queue) >= BATCH_GROUPS:
                self._cond.notify_all()

    def hurry(self) -> None:
        """No group worth waiting for is coming: the round filling up, and every later one,
        is written at once (its files are as durable; only the wait for company ends)."""
        with self._cond:
            self._hurried = True
            self._cond.notify_all()

    def wait(self) -> list[tuple[str, OSError]]:
        """Block until every group submitted so far is on disk; the failures since last asked."""
        with self._cond:
            self._waiting += 1
            self._cond.notify_all()  # a round filling up is written now
            try:
                while self._pending:
                    self._cond.wait()
            finally:
                self._waiting -= 1
            failed, self._failed = self._failed, []
        return failed

    async def settled(self) -> list[tuple[str, OSError]]:
        """:meth:`wait` on the event loop, without a thread of its own; cancellable."""
        loop = asyncio.get_running_loop()
        done = asyncio.Event()

        def wake() -> None:
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
                loop.call_soon_threadsafe(done.set)

        with self._cond:
            due = bool(self._pending)
            if due:
                self._waiting += 1
                self._wakers.append(wake)
                self._cond.notify_all()  # a round filling up is written now
        try:
            if due:
                await done.wait()
        finally:
            with self._cond:
                if wake in self._wakers:
                    self._wakers.remove(wake)
                    self._waiting -= 1
        with self._cond:
            failed, self._failed = self._failed, []
        return failed

    def close(self) -> list[tuple[str, OSError]]:
        """:meth:`wait`, then end the thread."""
        failed = self.wait()
        with self._cond:
            self._closed = True
            self._cond.notify_all()
            thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join()
        return failed

    def _work(self) -> None:
        while True:
            with self._cond:
                idle_since = time.monotonic()
                while not self._queue and not self._closed:
                    left = idle_since + IDLE_S - time.monotonic()
                    if left <= 0:  # nothing to do for a while: end; submit() starts another
                        self._thread = None
                        return
                    self._cond.wait(left)
                if not self._queue:
                    self._thread = None
                    return
                # Let a round with files to fsync fill up: one wake-up, one fsync round and
                # one fsync per directory for every group submitted meanwhile (unless someone
                # waits). A round of files that are not fsynced has nothing to share: it goes
                # at once, so a run's reused receipts are on disk by the time it ends.
                deadline = time.monotonic() + BATCH_S
                while (
                    self._durable
                    and not (self._waiting or self._closed or self._hurried)
                    and len(self._queue) < BATCH_GROUPS
                ):
                    left = deadline - time.monotonic()
                    if left <= 0:
                        break
                    self._cond.wait(left)
                batch, self._queue = self._queue, []
                self._durable = False
            try:
                errors: list[OSError | None] = commit([g.files for g in batch], made=self._made)
            except Exception as exc:  # a bug must not hang the run's end: every group failed
                errors = [OSError(f"writing failed: {type(exc).__name__}: {exc}")] * len(batch)
            with self._cond:
                self._failed += [(g.tag, e) for g, e in zip(batch, errors, strict=True) if e]
                self._pending -= len(batch)
                self.rounds += 1
                self._settle()

    def _fail_queued(self, error: OSError) -> None:
        """Every queued group fails with ``error`` (called holding the condition)."""
        batch, self._queue = self._queue, []
        self._durable = False
        self._failed += [(g.tag, error) for g in batch]
        self._pending -= len(batch)
        self._settle()

    def _settle(self) -> None:
        """Wake the waiters (called holding the condition); settled() callers once none is due."""
        self._cond.notify_all()
        if not self._pending:
            wakers, self._wakers = self._wakers, []
            self._waiting -= len(wakers)
            for wake in wakers:
                wake()

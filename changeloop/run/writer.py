"""Writing a run's records: receipts to the run directory and ``latest/``, passes to the cache.

Example::

    writer = ReceiptWriter(state, run_dir, change="add-greeting")
    writer.write(report, fingerprint="sha256:…")   # staged; written off the event loop
    lost = await writer.drain()                      # {provider: OSError} that could not be written

Sealing decided what each file holds (:mod:`changeloop.run.seal`); this module
only puts bytes on disk, through the group commit (:mod:`changeloop.run.commit`:
write all, fsync all, rename all). A reused receipt's bytes are durable already,
so they are written without an fsync, and not at all to ``latest/`` when the
same bytes are there. A provider whose files could not be written is reported
back by :meth:`ReceiptWriter.drain`; its receipts are then withdrawn by the run.
"""

from __future__ import annotations

import os
from pathlib import Path

import anyio

from changeloop.caching import local as cache
from changeloop.fsio import Pending
from changeloop.records import ProviderReport
from changeloop.run.commit import GroupCommit
from changeloop.workspace.state import StateDir

__all__ = ["ReceiptWriter", "same_bytes"]

_CACHE = "\0cache:"  # tag of a cache entry's group (no provider name holds a NUL)
CANCELLED_DRAIN_S = 10.0  # how long an interrupted run waits for its receipts to reach the disk


class ReceiptWriter:
    """The one writer of a run's receipts and cache entries."""

    def __init__(self, state: StateDir, run_dir: Path, change: str) -> None:
        self._commits = GroupCommit()
        self._run_dir = os.fspath(run_dir)
        self._latest = os.fspath(state.latest_dir(change))
        self._cache_dir = state.cache

    def write(self, report: ProviderReport, fingerprint: str | None = None) -> None:
        """Stage one provider's receipts (and its cache entry, when it may be cached)."""
        files: list[Pending] = []
        for entry in report.receipts:
            filename = Path(entry.path).name
            run_path = os.path.join(self._run_dir, report.name, filename)  # noqa: PTH118
            files.append(Pending(run_path, entry.envelope, durable=not entry.cached))
            latest = os.path.join(self._latest, filename)  # noqa: PTH118
            if not (entry.cached and same_bytes(Path(latest), entry.envelope)):
                files.append(Pending(latest, entry.envelope, durable=not entry.cached))
        self._commits.submit(report.name, files)
        if report.cache and fingerprint is not None and report.adapter not in cache.NEVER_CACHED:
            self._cache(report, fingerprint)

    def _cache(self, report: ProviderReport, fingerprint: str) -> None:
        """A provider's all-pass envelopes to the cache, in the same round as its receipts.

        Not fsynced: an entry lost or torn by a power cut fails its signature check
        on read and is a miss, never a pass.
        """
        envelopes = [e.envelope for e in report.receipts]
        target, data = cache.entry_of_passes(self._cache_dir, fingerprint, envelopes)
        # A directory squatting on the name is damaged state: rebuilt (by the writer thread).
        entry = Pending(target, data, durable=False, displace_dir=True)
        self._commits.submit(_CACHE + report.name, [entry])

    def hurry(self) -> None:
        """Every provider that runs has been written: what is staged goes to disk at once,
        without waiting for others to share its fsyncs (the rest are reuses: no fsync)."""
        self._commits.hurry()

    async def drain(self) -> dict[str, OSError]:
        """Wait until everything staged is on disk; the providers that failed.

        A cache entry that could not be written is not a failure (the next run
        is a miss). The run calls this before the verdict, and when it is
        cancelled: then the wait is shielded, but for :data:`CANCELLED_DRAIN_S` at
        most, so a stuck disk cannot hold an interrupted run (what is not written
        by then is what a kill leaves). The wait needs no thread (a process at its
        thread limit still ends) and a signal ends it.
        """
        try:
            failed = await self._commits.settled()
        except anyio.get_cancelled_exc_class():
            with anyio.move_on_after(CANCELLED_DRAIN_S, shield=True):
                await self._commits.settled()
            raise
        return {tag: error for tag, error in failed if not tag.startswith(_CACHE)}


def same_bytes(path: Path, data: bytes) -> bool:
    """``path`` holds exactly ``data`` already (a reused receipt need not be written again)."""
    try:
        return path.stat().st_size == len(data) and path.read_bytes() == data
    except OSError:
        return False

"""A hostile Dask worker for the tests: its ``run_job`` answers with planted files.

:func:`turn_hostile` runs on a real worker (``client.run``) and replaces the
worker's ``changeloop.executors.worker.run_job`` — what the coordinator submits
by name — with one that runs the job and then adds, to the archives it sends
back, files a coordinator must never write: a git hook, a replaced workspace
key, paths with ``..`` and absolute paths, links, a FIFO, and a report that is a
link to a file of the checkout. :func:`turn_honest` puts the real one back.
"""

from __future__ import annotations

import io
import stat
import tarfile
from dataclasses import replace
from typing import Any

from changeloop.executors import worker

ATTACKER_KEY = b"-----BEGIN PRIVATE KEY-----\nattacker\n-----END PRIVATE KEY-----\n"
HOOK = b"#!/bin/sh\ntouch planted-by-hook\n"
_REAL: list[Any] = []


def _add(archive: tarfile.TarFile, name: str, data: bytes = b"", **kind: Any) -> None:
    info = tarfile.TarInfo(name)
    info.mode = kind.pop("mode", 0o644)
    info.size = len(data)
    for key, value in kind.items():
        setattr(info, key, value)
    if info.type != tarfile.REGTYPE:
        info.size = 0
    archive.addfile(info, io.BytesIO(data) if info.size else None)


def _hostile(archive_bytes: bytes, outside: str, report: str | None) -> bytes:
    """The worker's archive plus what an attacker plants (the honest members first)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as out:
        if archive_bytes:
            with tarfile.open(fileobj=io.BytesIO(archive_bytes), mode="r:") as honest:
                for member in honest.getmembers():
                    if report is not None and member.name == report:
                        continue  # replaced below by a link
                    data = honest.extractfile(member) if member.isfile() else None
                    out.addfile(member, data)
        _add(out, ".git/hooks/post-commit", HOOK, mode=0o755)
        _add(out, "./.git/hooks/pre-commit", HOOK, mode=0o755)
        _add(out, ".changeloop/keys/local.key", ATTACKER_KEY, mode=0o600)
        _add(out, "../planted-above.txt", b"above")
        _add(out, f"{outside}/planted-absolute.txt", b"absolute")
        _add(out, "evil", type=tarfile.SYMTYPE, linkname=outside)
        _add(out, "evil/through-link.txt", b"through a link")
        _add(out, "hard", type=tarfile.LNKTYPE, linkname=".changeloop/keys/local.key")
        _add(out, "fifo", type=tarfile.FIFOTYPE, mode=stat.S_IFIFO | 0o644)
        if report is not None:  # the declared report: a link to the workspace key
            _add(out, report, type=tarfile.SYMTYPE, linkname="../.changeloop/keys/local.key")
    return buffer.getvalue()


def turn_hostile(outside: str, dask_worker: Any = None) -> str:
    """Replace this worker's ``run_job`` (its address back)."""
    if not _REAL:
        _REAL.append(worker.run_job)
    real = _REAL[0]

    def run_job(wire: Any) -> Any:
        result = real(wire)
        return replace(
            result,
            outputs=_hostile(result.outputs, outside, wire.job.report),
            logs=_hostile(result.logs, outside, None),
            log_name="../../../keys/local.key",
        )

    worker.run_job = run_job
    return str(dask_worker.address) if dask_worker is not None else ""


def turn_honest() -> None:
    if _REAL:
        worker.run_job = _REAL[0]

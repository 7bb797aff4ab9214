"""Captured output of one process: redaction, bounded files and tails, the log digest.

Secret values (``envFrom``) are masked before any byte reaches a file or a
tail; a trailing fragment that could be the start of a secret is held back
until the next write decides it.

One copy of the output: the log (stdout and stderr as they came). A separate
stdout file is written only for a job whose adapter reads its stdout (an
envelope, libtest text), never for a plain command.

Each file holds at most :func:`log_limit` bytes (``CHANGELOOP_LOG_LIMIT``,
default 64 MiB; ``512K``, ``16M``, ``1G`` or a byte count): past it the log
says once that it was truncated, and the rest of the output is still read
(the process never blocks on a full pipe) but dropped; the tails keep
following it, so the receipt's log tail shows how the output really ended.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Sequence
from pathlib import Path

from changeloop.fsio.writes import write_fd

TAIL_LINES = 40
TAIL_BYTES = 4096
MASK = b"***"
LOG_LIMIT_ENV = "CHANGELOOP_LOG_LIMIT"
DEFAULT_LOG_LIMIT = 64 * 1024 * 1024
_UNITS = {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3}


def log_limit() -> int:
    """Bytes a log (and a stdout copy, where one is kept) may hold: ``CHANGELOOP_LOG_LIMIT``.

    A value that cannot be read as a size (``64M``, ``512K``, ``1048576``) is the default, 64 MiB.
    """
    text = os.environ.get(LOG_LIMIT_ENV, "").strip().upper().removesuffix("B").removesuffix("I")
    unit = text[-1:] if text[-1:] in _UNITS else ""
    number = text[: len(text) - len(unit)]
    if not number.isdigit() or int(number) < 1:
        return DEFAULT_LOG_LIMIT
    return int(number) * _UNITS[unit]


# A log is a new file in a run directory of ours: never written through a planted symlink.
_LOG_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC


class Redactor:
    """Replaces secrets in a byte stream.

    Holds back only a tail that could be the start of a secret, so output
    without secrets flows (and interleaves) immediately.
    """

    def __init__(self, secrets: Sequence[str]) -> None:
        self._pats = sorted({s.encode() for s in secrets if s}, key=len, reverse=True)
        self._re = re.compile(b"|".join(re.escape(p) for p in self._pats)) if self._pats else None
        self._longest = max((len(p) for p in self._pats), default=0)
        self._buf = b""

    def _partial(self, buf: bytes) -> int:
        """Length of the longest suffix of ``buf`` that is a proper prefix of a secret."""
        for i in range(max(0, len(buf) - self._longest + 1), len(buf)):
            tail = buf[i:]
            if any(len(p) > len(tail) and p.startswith(tail) for p in self._pats):
                return len(buf) - i
        return 0

    def feed(self, data: bytes) -> bytes:
        if self._re is None:
            return data
        buf = self._buf + data
        cut = len(buf) - self._partial(buf)
        for m in self._re.finditer(buf):
            if m.start() >= cut:
                break
            if m.end() > cut:  # a whole secret straddles the cut: emit it masked
                cut = m.end()
                break
        self._buf = buf[cut:]
        return self._re.sub(MASK, buf[:cut])

    def flush(self) -> bytes:
        buf, self._buf = self._buf, b""
        return self._re.sub(MASK, buf) if self._re is not None else buf


class Tail:
    """The last bytes of a stream, cheap to append to."""

    def __init__(self) -> None:
        self._buf = bytearray()

    def add(self, data: bytes) -> None:
        self._buf += data
        if len(self._buf) > 2 * TAIL_BYTES:
            del self._buf[:-TAIL_BYTES]

    def text(self) -> str:
        text = bytes(self._buf[-TAIL_BYTES:]).decode("utf-8", "replace")
        return "".join(text.splitlines(keepends=True)[-TAIL_LINES:])


class Output:
    """Log files, digest and tails of one process; written only with redacted bytes."""

    def __init__(
        self, log_dir: Path, log_name: str, secrets: Sequence[str], *, keep_stdout: bool = False
    ) -> None:
        self.log_path = log_dir / f"{log_name}.log"
        # stdout alone only for a parser of it: a plain command's output is written once
        self.stdout_path = log_dir / f"{log_name}.stdout" if keep_stdout else None
        # Plain descriptors, not file objects: opening a file object also probes for a
        # terminal and seeks (three syscalls more per log), and output arrives in pipe-sized
        # chunks that need no second buffer.
        try:
            self._log = os.open(self.log_path, _LOG_FLAGS, 0o644)
        except FileNotFoundError:  # the directory is made on first use only (one syscall less)
            log_dir.mkdir(parents=True, exist_ok=True)
            self._log = os.open(self.log_path, _LOG_FLAGS, 0o644)
        self._out: int | None = None
        if self.stdout_path is not None:
            try:
                self._out = os.open(self.stdout_path, _LOG_FLAGS, 0o644)
            except BaseException:
                os.close(self._log)
                raise
        self._closed = False
        self._sha = hashlib.sha256()
        self._redact = {"stdout": Redactor(secrets), "stderr": Redactor(secrets)}
        self.tails = {"stdout": Tail(), "stderr": Tail(), "log": Tail()}
        self._limit = log_limit()
        self._room = {fd: self._limit for fd in (self._log, self._out) if fd is not None}
        self.truncated = False  # output was dropped past the limit

    def write(self, stream: str, data: bytes, *, final: bool = False) -> None:
        red = self._redact[stream]
        clean = red.feed(data) + (red.flush() if final else b"")
        if not clean:
            return
        self._bounded(self._log, clean)
        self.tails["log"].add(clean)
        self.tails[stream].add(clean)
        if stream == "stdout" and self._out is not None:
            self._bounded(self._out, clean)

    def _bounded(self, fd: int, data: bytes) -> None:
        """Write what fits under the limit; the log says once where it was cut."""
        room = self._room[fd]
        if room <= 0:
            return
        part = data[:room]
        self._room[fd] = room - len(part)
        write_fd(fd, part)
        if fd == self._log:
            self._sha.update(part)
        if len(part) < len(data):
            self.truncated = True
            if fd == self._log:
                self._line(
                    f"\n[changeloop] output truncated: the log keeps its first {self._limit}"
                    f" bytes ({LOG_LIMIT_ENV}); the rest was read and dropped (its last lines"
                    " are in the log tail)"
                )

    def note(self, text: str) -> None:
        """A line of changeloop's own, e.g. why the process ended."""
        self.write("stderr", b"", final=True)
        self.write("stdout", b"", final=True)
        self._line(f"[changeloop] {text}")

    def _line(self, text: str) -> None:
        """A line of changeloop's own in the log (never cut: it says why the log ends)."""
        line = f"{text}\n".encode()
        write_fd(self._log, line)
        self._sha.update(line)
        self.tails["log"].add(line)

    def close(self) -> None:
        if self._closed:
            return
        try:
            self.write("stdout", b"", final=True)
            self.write("stderr", b"", final=True)
        finally:
            self._closed = True
            os.close(self._log)
            if self._out is not None:
                os.close(self._out)

    @property
    def sha256(self) -> str:
        return self._sha.hexdigest()

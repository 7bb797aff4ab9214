"""Captured output of one process: redaction, bounded tails, the log digest.

Secret values (``envFrom``) are masked before any byte reaches a file or a
tail; a trailing fragment that could be the start of a secret is held back
until the next write decides it.
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

    def __init__(self, log_dir: Path, log_name: str, secrets: Sequence[str]) -> None:
        self.log_path = log_dir / f"{log_name}.log"
        self.stdout_path = log_dir / f"{log_name}.stdout"
        # Plain descriptors, not file objects: opening a file object also probes for a
        # terminal and seeks (three syscalls more per log), and output arrives in pipe-sized
        # chunks that need no second buffer.
        try:
            self._log = os.open(self.log_path, _LOG_FLAGS, 0o644)
        except FileNotFoundError:  # the directory is made on first use only (one syscall less)
            log_dir.mkdir(parents=True, exist_ok=True)
            self._log = os.open(self.log_path, _LOG_FLAGS, 0o644)
        try:
            self._out = os.open(self.stdout_path, _LOG_FLAGS, 0o644)
        except BaseException:
            os.close(self._log)
            raise
        self._closed = False
        self._sha = hashlib.sha256()
        self._redact = {"stdout": Redactor(secrets), "stderr": Redactor(secrets)}
        self.tails = {"stdout": Tail(), "stderr": Tail(), "log": Tail()}

    def write(self, stream: str, data: bytes, *, final: bool = False) -> None:
        red = self._redact[stream]
        clean = red.feed(data) + (red.flush() if final else b"")
        if not clean:
            return
        write_fd(self._log, clean)
        self._sha.update(clean)
        self.tails["log"].add(clean)
        self.tails[stream].add(clean)
        if stream == "stdout":
            write_fd(self._out, clean)

    def note(self, text: str) -> None:
        """A line of changeloop's own, e.g. why the process ended."""
        self.write("stderr", b"", final=True)
        self.write("stdout", b"", final=True)
        line = f"[changeloop] {text}\n".encode()
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
            os.close(self._out)

    @property
    def sha256(self) -> str:
        return self._sha.hexdigest()

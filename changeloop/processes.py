"""Process discipline: own process group, timeout, TERM→grace→KILL, redacted logs."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class ProcessResult:
    argv: tuple[str, ...]
    exit_code: int | None  # None when it never started or was killed
    timed_out: bool
    spawn_error: str | None  # e.g. "executable not found: npx"
    duration_ms: int
    log_path: Path  # stdout and stderr interleaved, secrets redacted
    stdout_path: Path  # stdout alone, secrets redacted (for parsers)
    log_sha256: str
    stdout_tail: str
    stderr_tail: str
    log_tail: str

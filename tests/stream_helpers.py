"""A text stream that remembers each write it was handed (how output is batched)."""

from __future__ import annotations

import io


class RecordingStream(io.StringIO):
    def __init__(self) -> None:
        super().__init__()
        self.writes: list[str] = []

    def write(self, text: str) -> int:
        self.writes.append(text)
        return super().write(text)

"""Layout of ``.changeloop/`` (DESIGN.md §2.4), in one place.

``keys/`` the workspace key; ``cache/`` pass receipts by fingerprint;
``runs/<run-id>/`` logs, reports and receipts of one run;
``receipts/<change>/`` the latest receipt per provider and capability;
``durations.json`` how long providers took, for critical-path scheduling.
"""

from __future__ import annotations

import json
import os
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path


@dataclass(frozen=True)
class StateDir:
    root: Path  # the workspace root

    @property
    def path(self) -> Path:
        return self.root / ".changeloop"

    @property
    def cache(self) -> Path:
        return self.path / "cache"

    @property
    def runs(self) -> Path:
        return self.path / "runs"

    @property
    def sandboxes(self) -> Path:
        return self.path / "sandboxes"

    def latest(self, change: str) -> Path:
        return self.path / "receipts" / change

    def new_run_dir(self) -> tuple[str, Path]:
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
        run_id = f"{stamp}-{secrets.token_hex(3)}"
        path = self.runs / run_id
        path.mkdir(parents=True, exist_ok=False)
        return run_id, path

    # -- durations remembered between runs (critical-path weights) --------
    def _durations_file(self) -> Path:
        return self.path / "durations.json"

    def load_durations(self, change: str) -> dict[str, float]:
        try:
            data = json.loads(self._durations_file().read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        per_change = data.get(change, {}) if isinstance(data, dict) else {}
        return {k: float(v) for k, v in per_change.items() if isinstance(v, int | float)}

    def save_durations(self, change: str, durations: dict[str, float]) -> None:
        target = self._durations_file()
        try:
            data = json.loads(target.read_text(encoding="utf-8"))
            if not isinstance(data, dict):
                data = {}
        except (OSError, ValueError):
            data = {}
        data.setdefault(change, {}).update(durations)
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(data, sort_keys=True), encoding="utf-8")
        tmp.replace(target)


def ensure_gitignored(root: Path) -> None:
    """Keep ``.changeloop/`` out of the user's commits without touching their .gitignore."""
    state = root / ".changeloop"
    state.mkdir(exist_ok=True)
    ignore = state / ".gitignore"
    if not ignore.exists():
        ignore.write_text("*\n", encoding="utf-8")

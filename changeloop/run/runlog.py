"""``.changeloop/runs/<id>/run.json``: when and where each provider of a run ran.

The report's timeline and critical path need what receipts do not say: which
job slot a provider held, when the scheduler started and finished it, what it
waited for, and whether its result was made here or reused (docs/design.md).
The engine feeds the scheduler's events into a
:class:`RunLog` and writes it once, atomically, when the run ends.

Slots are assigned as the scheduler fills them: a started job takes the lowest
slot no running job holds, so at most ``--jobs`` slots are ever used and a
lane of the chart is one slot.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from changeloop import __version__
from changeloop.errors import ChangeloopError, FileRefused, Location, Problem
from changeloop.fsio import read_regular_stat, write_atomic
from changeloop.stamps import utc_stamp

if TYPE_CHECKING:
    from changeloop.scheduling.scheduler import TaskEvent

RUN_FILE = "run.json"
RUN_FILE_LIMIT = 64 * 1024 * 1024  # a run of thousands of providers writes a few MB
SCHEMA = "changeloop/run@1"


def stamp(seconds: float | None) -> str | None:
    """RFC 3339 UTC with milliseconds, or None."""
    return None if seconds is None else utc_stamp(datetime.fromtimestamp(seconds, UTC))


@dataclass
class ProviderRun:
    """One provider's line of ``run.json``."""

    name: str
    adapter: str
    repository: str | None
    dependencies: tuple[str, ...]
    state: str = "not-run"  # ran | cached | not-run
    origin: str | None = None  # where the result was made: local | cache
    slot: int | None = None
    start: float | None = None
    end: float | None = None
    duration_ms: int | None = None
    reason: str | None = None
    receipts: list[str] = field(default_factory=list)  # paths relative to the workspace root

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "adapter": self.adapter,
            "repository": self.repository,
            "state": self.state,
            "origin": self.origin,
            "slot": self.slot,
            "start": stamp(self.start),
            "end": stamp(self.end),
            "durationMs": self.duration_ms,
            "dependencies": list(self.dependencies),
            "reason": self.reason,
            "receipts": list(self.receipts),
        }


class RunLog:
    """Records scheduler events of one run; :meth:`write` makes ``run.json``."""

    def __init__(
        self,
        *,
        run_id: str,
        change: str,
        slots: int,
        sandbox: str,
        providers: Sequence[tuple[str, str, str | None, tuple[str, ...]]],
    ) -> None:
        self.run_id = run_id
        self.change = change
        self.slots = max(1, slots)
        self.sandbox = sandbox
        self.started = datetime.now(UTC).timestamp()
        self.finished: float | None = None
        self.providers: dict[str, ProviderRun] = {
            name: ProviderRun(name, adapter, repo, deps) for name, adapter, repo, deps in providers
        }
        self._busy: dict[int, str] = {}
        # "no-change" when the run was answered from the signed record (changeloop.nochange)
        self.decision: str | None = None

    def event(self, event: TaskEvent) -> None:
        """One scheduler event: ``started`` takes the lowest free slot, ``finished`` frees it."""
        record = self.providers.get(event.task)
        if record is None:
            return
        if event.kind == "started":
            slot = next(i for i in range(len(self._busy) + 1) if i not in self._busy)
            self._busy[slot] = event.task
            record.slot, record.start = slot, event.at
        elif event.kind == "finished":
            record.end = event.at
            if record.slot is not None and self._busy.get(record.slot) == event.task:
                del self._busy[record.slot]

    def settle(
        self,
        states: Mapping[str, tuple[str, int, str | None, Sequence[str]]],
    ) -> None:
        """Per provider (state, duration in ms, reason, receipt paths) as the run decided."""
        self.finished = datetime.now(UTC).timestamp()
        for name, (state, duration_ms, reason, receipts) in states.items():
            record = self.providers.get(name)
            if record is None:  # a repository's setup pseudo-provider: no slot of its own
                continue
            record.state = state
            record.origin = {"ran": "local", "cached": "cache"}.get(state)
            record.duration_ms = duration_ms if state == "ran" else None
            record.reason = reason
            record.receipts = list(receipts)

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "runId": self.run_id,
            "change": self.change,
            "changeloopVersion": __version__,
            "sandbox": self.sandbox,
            "slots": self.slots,
            "startedOn": stamp(self.started),
            "finishedOn": stamp(self.finished),
            "providers": {name: p.to_json() for name, p in self.providers.items()},
            **({"decision": self.decision} if self.decision else {}),
        }

    def write(self, run_dir: Path, *, durable: bool = True) -> Path:
        path = run_dir / RUN_FILE
        data = json.dumps(self.to_json(), indent=2, ensure_ascii=False) + "\n"
        write_atomic(path, data.encode("utf-8"), durable=durable)
        return path


def load(run_dir: Path) -> dict[str, Any]:
    """A run's ``run.json``, or a refusal naming the file and what to do."""
    path = run_dir / RUN_FILE
    try:  # bounded, never through a link: a FIFO or /dev/zero there is refused, not read
        raw = read_regular_stat(
            path, limit=RUN_FILE_LIMIT, what="run record", follow_symlinks=False
        )
        data = json.loads(raw[0])
    except FileRefused as exc:
        if not exc.missing:
            raise _unreadable(path, exc.problems[0].message) from exc
        raise ChangeloopError(
            [
                Problem(
                    code="run_record_missing",
                    message=f"{path} does not exist (the run was interrupted, or made by a "
                    "changeloop that did not record runs)",
                    location=Location(str(path)),
                    fix="run `changeloop prove` again, or pick another run with --run",
                )
            ]
        ) from exc
    except (ValueError, RecursionError) as exc:
        raise _unreadable(path, f"{path} cannot be read as JSON: {exc}") from exc
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise _unreadable(path, f"{path} is not a {SCHEMA} record")
    problem = _shape_problem(data)
    if problem is not None:
        raise _unreadable(path, f"{path}: {problem}")
    return data


def _unreadable(path: Path, message: str) -> ChangeloopError:
    return ChangeloopError(
        [
            Problem(
                code="run_record_unreadable",
                message=message,
                location=Location(str(path)),
                fix="run `changeloop prove` again; every run writes its own run.json",
            )
        ]
    )


def _is_time(value: Any) -> bool:
    if not isinstance(value, str):
        return False
    try:
        datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return False
    return True


def _shape_problem(data: Mapping[str, Any]) -> str | None:
    """The first key of ``run.json`` that is not what the engine writes, named; else None."""
    for key in ("runId", "change"):
        if not isinstance(data.get(key), str):
            return f"{key} must be a string"
    if not _is_time(data.get("startedOn")):
        return "startedOn must be an RFC 3339 time"
    if data.get("finishedOn") is not None and not _is_time(data["finishedOn"]):
        return "finishedOn must be an RFC 3339 time or null"
    if not isinstance(data.get("slots"), int) or isinstance(data.get("slots"), bool):
        return "slots must be an integer"
    providers = data.get("providers")
    if not isinstance(providers, dict):
        return "providers must be an object keyed by provider name"
    for name, p in providers.items():
        where = f"providers.{name}"
        if not isinstance(p, dict):
            return f"{where} must be an object"
        if p.get("state") not in ("ran", "cached", "not-run"):
            return f"{where}.state must be ran, cached or not-run"
        slot = p.get("slot")
        if slot is not None and (not isinstance(slot, int) or isinstance(slot, bool) or slot < 0):
            return f"{where}.slot must be a whole number or null"
        for key in ("start", "end"):
            if p.get(key) is not None and not _is_time(p[key]):
                return f"{where}.{key} must be an RFC 3339 time or null"
        for key in ("dependencies", "receipts"):
            value = p.get(key, [])
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                return f"{where}.{key} must be a list of strings"
    return None


def providers_of(record: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """``run.json``'s providers by name (each entry also carries its ``name``)."""
    found = record.get("providers")
    if not isinstance(found, dict):
        return {}
    return {
        str(name): {**entry, "name": str(name)}
        for name, entry in found.items()
        if isinstance(entry, dict)
    }

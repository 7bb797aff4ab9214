"""The run an answer from the record leaves behind: ``runs/<id>/`` with its receipts and run.json.

The same run directory a full re-prove with every provider cached leaves, bar
``"decision": "no-change"`` in its ``run.json``; laid out only once the answer
holds (changeloop.nochange.answer).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NamedTuple

from changeloop import fsio
from changeloop.nochange.key import RECORD_LIMIT


class Laid(NamedTuple):
    """A run directory holding the recorded receipts, before the decision is known."""

    run_id: str
    run_dir: Path
    paths: dict[str, list[str]]  # provider -> its receipts, relative to the workspace root


def lay_out(
    state: Any, change_id: str, doc: Mapping[str, Any], run_id: str, spare: Path | None = None
) -> Laid:
    """A new ``runs/<id>/<provider>/`` per provider holding its receipts (hard links of
    ``latest/``'s identical bytes); removed again if that fails (the full path runs).
    ``spare``: an old run to lay it out in, its provider folders kept (``make_room``)."""
    providers = doc["answer"]["providers"]
    run_id, run_dir = state.new_run_dir(run_id, spare=spare, folders=[p["name"] for p in providers])
    try:
        latest = state.latest(change_id)
        paths: dict[str, list[str]] = {}
        for p in providers:
            name = p["name"]
            folder = run_dir / name
            folder.mkdir(parents=True, exist_ok=True)
            listed = paths[name] = []
            for receipt in p["receipts"]:
                target = folder / receipt["file"]
                _link_or_copy(latest / receipt["file"], target)
                listed.append(str(target.relative_to(state.root)))
    except BaseException:
        shutil.rmtree(run_dir, ignore_errors=True)
        raise
    return Laid(run_id, run_dir, paths)


def write_run(change_id: str, doc: Mapping[str, Any], jobs: int, laid: Laid) -> None:
    """The run's ``run.json`` beside the receipts :func:`lay_out` put there: every provider
    ``cached``, and ``"decision": "no-change"``."""
    from changeloop.run.runlog import RunLog  # noqa: PLC0415 - kept off the no-change answer's imports

    recorded = doc["answer"]
    log = RunLog(
        run_id=laid.run_id,
        change=change_id,
        slots=jobs,
        sandbox=doc["key"]["options"]["sandbox"],
        providers=[
            (p["name"], p["adapter"], p["repository"], tuple(p["dependsOn"]))
            for p in recorded["providers"]
        ],
    )
    log.decision = "no-change"
    now = datetime.now(UTC).timestamp()
    settled: dict[str, tuple[str, int, str | None, list[str]]] = {}
    for p in recorded["providers"]:
        name = p["name"]
        record = log.providers[name]
        record.slot, record.start, record.end = 0, now, now
        settled[name] = ("cached", 0, None, laid.paths[name])
    log.settle(settled)
    log.write(laid.run_dir, durable=False)  # a copy of what the signed record already holds


def _link_or_copy(source: Path, target: Path) -> None:
    """The receipt in the run directory: a hard link of ``latest/``'s identical bytes."""
    try:
        os.link(source, target, follow_symlinks=False)
    except OSError:
        data = fsio.read_regular_stat(
            source, limit=RECORD_LIMIT, what="receipt", follow_symlinks=False
        )[0]
        fsio.write_atomic(target, data, durable=False)

"""A worker's sandboxes of one run: made from the content cache, checked, set up once.

Each run (``session``) gets its own sandbox of each repository on each worker,
copied from the content cache keyed by tree id, its git tree checked against
the job's before anything runs, and its ``setup`` commands run once. Jobs of a
run on a worker share them under one lock per sandbox; :func:`close_session`
forgets them when the coordinator is done.
"""

from __future__ import annotations

import os
import shutil
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import anyio

from changeloop.executors.content import tree_of, unpack
from changeloop.executors.wire import Failure, WireJob, WireRepo
from changeloop.process.run import ProcessResult, run_process

SETUP_TIMEOUT_MS = 30 * 60 * 1000


@dataclass
class Box:
    """One run's sandbox of one repository on this worker (written under its lock only)."""

    tree: str
    path: Path
    failure: Failure | None  # content-mismatch, or its setup failed here
    steps: int = 0  # setup commands done here


_guard = threading.Lock()
_locks: dict[str, threading.Lock] = {}
_sandboxes: dict[str, Box] = {}
_closed: set[str] = set()  # sessions whose coordinator has closed: no sandbox is made for them


def close_session(session: str) -> None:
    """No sandbox is made for ``session`` any more; those made are forgotten.

    A prepare still making one finishes first (its lock); none is made after.
    """
    with _guard:
        _closed.add(session)
        keys = [k for k in _locks if k.startswith(session + "/")]
    for key in keys:
        with _lock(key):
            _sandboxes.pop(key, None)
    with _guard:
        for key in keys:
            _locks.pop(key, None)


def available(wire: WireJob, repo: WireRepo, base: Path) -> bool:
    """Whether this worker has ``repo``'s content: made for this run, cached, or sent along."""
    box = _sandboxes.get(f"{wire.session}/{repo.name}")
    if box is not None and box.tree == repo.tree:
        return True
    return repo.tree in wire.contents or (base / "trees" / repo.tree).is_dir()


def setup_done(wire: WireJob, box: Box, *, ok: bool) -> None:
    """A setup job finished: count its step."""
    with _lock(f"{wire.session}/{wire.job.sandbox.repository}"):
        if ok and box.steps == wire.setup_step:
            box.steps += 1


def _lock(key: str) -> threading.Lock:
    with _guard:
        return _locks.setdefault(key, threading.Lock())


@dataclass(frozen=True)
class Place:
    """Where and for whom a sandbox is made: the run, the submission, this worker."""

    session: str
    token: str
    contents: Mapping[str, bytes]
    base: Path
    address: str
    secrets: tuple[str, ...]  # masked in setup logs
    logs: Path  # where setup logs go: under the worker's recorded run (worker_processes)


def sandbox_of(place: Place, repo: WireRepo, *, steps: int | None) -> Box | None:
    """This run's sandbox of ``repo``: made and checked once, set up to ``steps`` commands.

    ``steps`` None: all of its setup (a job's own repository, a service's). None
    is returned when this worker lacks the content (or the run has closed).
    """
    key = f"{place.session}/{repo.name}"
    with _lock(key):
        if place.session in _closed:
            return None
        box = _sandboxes.get(key)
        if box is None or box.tree != repo.tree:
            made = _materialize(place, repo)
            if made is None:
                return None
            box = _sandboxes[key] = made
        todo = len(repo.setup) if steps is None else min(steps, len(repo.setup))
        if box.failure is None and box.steps < todo:
            box.failure = _setup(place, repo, box, todo)
        return box


def _materialize(place: Place, repo: WireRepo) -> Box | None:
    cached = place.base / "trees" / repo.tree
    if not cached.is_dir():
        content = place.contents.get(repo.tree)
        if content is None:
            return None
        staging = place.base / "trees" / f".{repo.tree}.{place.token}.{threading.get_ident()}"
        unpack(content, staging)
        try:
            staging.rename(cached)
        except OSError:  # another job unpacked it first
            shutil.rmtree(staging, ignore_errors=True)
    path = place.base / "runs" / place.session / "repos" / repo.name
    shutil.rmtree(path, ignore_errors=True)
    shutil.copytree(cached, path, symlinks=True)
    tree = tree_of(path, place.base / "hash.git")
    failure: Failure | None = None
    if tree != repo.tree:
        why = (
            f"worker {place.address} materialized tree {tree} for repository "
            f"{repo.name}, not the job's {repo.tree}"
        )
        failure = ("fail", "content-mismatch", why)
    return Box(repo.tree, path, failure)


def _setup(place: Place, repo: WireRepo, box: Box, todo: int) -> Failure | None:
    """Run setup commands ``box.steps`` up to ``todo`` here; the first failure is the answer."""
    logs = place.logs / repo.name
    while box.steps < todo:
        argv = repo.setup[box.steps]
        name = f"setup-{box.steps}"
        result = anyio.run(_plain, list(argv), box.path, logs, name, place.secrets)
        if result.exit_code != 0:
            why = result.spawn_error or f"exited {result.exit_code}"
            message = f"setup {' '.join(argv)} on worker {place.address}: {why}"
            return ("inconclusive", "setup-failed", message)
        box.steps += 1
    return None


async def _plain(
    argv: list[str], cwd: Path, logs: Path, name: str, secrets: tuple[str, ...]
) -> ProcessResult:
    logs.mkdir(parents=True, exist_ok=True)
    return await run_process(
        argv,
        cwd=cwd,
        env=dict(os.environ),
        timeout_ms=SETUP_TIMEOUT_MS,
        log_dir=logs,
        log_name=name,
        secrets=secrets,
    )

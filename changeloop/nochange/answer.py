"""Answering a re-prove from the signed record, or saying why not (then the full path runs).

The order of the answer is this module's job: the content identities start
(:mod:`~changeloop.nochange.content`), the record is read and verified
(:mod:`~changeloop.nochange.signed`), the rest of its key is checked here while git
runs, and only a holding answer lays out its run (:mod:`~changeloop.nochange.materialize`).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from changeloop import fsio
from changeloop.errors import ChangeloopError, FileRefused
from changeloop.git.repo import excludes_digest
from changeloop.masking import Masker
from changeloop.nochange.content import Content, begin
from changeloop.nochange.key import (
    RECORD_LIMIT,
    base_key,
    env_from,
    environ_values,
    file_digest,
    part_digest,
    secret_key,
    stat_of,
)
from changeloop.nochange.materialize import lay_out, write_run
from changeloop.nochange.miss import EXPLAIN, Miss, explain
from changeloop.nochange.placeholder import substitute
from changeloop.nochange.signed import read_record, verify_record
from changeloop.passenv import command_environ
from changeloop.workspace.prune import make_room
from changeloop.workspace.state import StateDir, ensure_gitignored, new_run_id

if TYPE_CHECKING:
    from changeloop.run.carried import KnownInputs

__all__ = ["EXPLAIN", "Answer", "answer"]


class Answer(NamedTuple):
    """A re-prove answered from the record: what to print and the exit code."""

    run_id: str
    json: dict[str, Any]
    board: str
    warnings: tuple[str, ...]
    archived: str | None
    providers: tuple[str, ...]
    proven: bool


def answer(
    root: Path,
    change_id: str,
    change_path: Path,
    *,
    config: Mapping[str, str | None],
    options: Mapping[str, Any],
    jobs: int,
    seen: dict[str, str] | None = None,
    known: dict[str, KnownInputs] | None = None,
    content: Content | None = None,
) -> Answer | None:
    """The recorded answer when nothing it depends on changed, else None (run the full path).

    Never raises for a damaged, stale or foreign record. A state directory that
    must be refused (``state.check_state``) is left to the full path, which
    refuses it in the same words. ``seen`` learns the content trees computed on the
    way (checkout path -> tree), for the full path to start from; ``known`` learns the
    verified record's inputs digests (checkout path -> ``KnownInputs``), which the full
    path carries over for providers whose inputs did not change (``run.carried``).
    ``content``: what :func:`~changeloop.nochange.content.begin` began for this root,
    change and sandbox (else begun here).
    """
    if content is None:
        content = begin(root, options["sandbox"])
    try:
        key = base_key(root, change_id, change_path, options, config)
    except Exception:  # an interruption does not wait for git: the process is leaving
        content.wait()  # nothing it computed is used
        raise
    try:
        return _answer(
            root,
            change_id,
            key,
            jobs,
            {} if seen is None else seen,
            {} if known is None else known,
            content,
        )
    except Miss as miss:
        explain(str(miss))
    except (ChangeloopError, OSError, ValueError, KeyError, TypeError, RecursionError) as exc:
        explain(f"{type(exc).__name__}: {exc}")
    return None


def _answer(  # noqa: PLR0917 (one caller)
    root: Path,
    change_id: str,
    base: Mapping[str, Any],
    jobs: int,
    seen: dict[str, str],
    known: dict[str, KnownInputs],
    content: Content,
) -> Answer | None:

    # The content identities (git, waiting on processes) run on threads of their own while
    # everything else is checked. The workspace root's was begun first, before the state
    # checks and before any record was read: the root is ours, not the record's, and its
    # content is what the full path stages too. The other repositories start once the
    # state checks passed; only their paths are taken from the record before its signature
    # is checked (git there, with a temporary index, writes objects and nothing else). No
    # tree computed is used unless the record verifies.
    try:
        state = StateDir(root)  # the state checks every verb makes (a refusal: full path says it)
        raw, payload, doc = read_record(state.path, change_id)
        content.start(doc)
        seed = verify_record(state.path, raw, payload)
    except Exception:
        content.hand_on(seen, verified=False)  # the root's tree only: it is ours
        raise
    try:
        return _decide(root, change_id, state, doc, seed, base, jobs, seen, content)
    except Exception:
        # Only a miss hands the inputs digests on (run.carried: imports a hit skips).
        known.update(_known_inputs(doc, base))
        raise


def _decide(  # noqa: PLR0917 (one caller)
    root: Path,
    change_id: str,
    state: Any,
    doc: dict[str, Any],
    seed: bytes,
    base: Mapping[str, Any],
    jobs: int,
    seen: dict[str, str],
    content: Content,
) -> Answer:
    """The verified record's answer when its key still holds, else a ``Miss``.

    While ``content`` computes the content identities, this thread checks the rest
    (cache entries, environment parts, ``latest/``, ``envFrom``); the content's verdict
    comes first either way (an edited input is the usual miss), and its trees are handed
    on to the full path (``seen``) whatever missed.
    """
    if doc["key"] != base:
        content.hand_on(seen, verified=True)
        changed = sorted(k for k in base if doc["key"].get(k) != base[k])
        raise Miss(f"{', '.join(changed)} changed")
    try:
        _still(doc, state.path, seed)
        _same_latest(state.latest(change_id), change_id, doc["answer"])
        run_id = new_run_id()
        found = _prepared(doc, run_id)  # what to print, made while git runs
        spare = make_room(state.path, change_id)  # hit or miss, a run comes: room made now
        content.verdict()
    except Exception:  # not an interruption: that one ends the run at once
        content.hand_on(seen, verified=True)
        content.verdict()  # the content's miss is the one said, when it missed too
        raise
    # Only now: laid out while git ran, a run directory cost a miss more than it saved a
    # hit (its removal waits on the file system's journal; bench/README.md).
    ensure_gitignored(root)
    laid = lay_out(state, change_id, doc, run_id, spare)
    write_run(change_id, doc, jobs, laid)
    return found


def _known_inputs(doc: Mapping[str, Any], base: Mapping[str, Any]) -> dict[str, KnownInputs]:
    """The verified record's inputs digests per checkout path, when this changeloop computes
    digests the way the record's did; a repository with a submodule carries none."""
    from changeloop.run.carried import KnownInputs  # noqa: PLC0415 - kept off the no-change answer's imports

    key = doc["key"]
    if (key.get("changeloop"), key.get("fingerprintFormat")) != (
        base["changeloop"],
        base["fingerprintFormat"],
    ):
        return {}
    out: dict[str, KnownInputs] = {}
    for repo in doc["repositories"].values():
        inputs = repo.get("inputs")
        if repo.get("gitlinks") is not False or not isinstance(inputs, dict):
            continue
        if not all(isinstance(k, str) and isinstance(v, str) for k, v in inputs.items()):
            continue
        links = repo["symlinks"]
        if not isinstance(links, list) or not all(isinstance(x, str) for x in links):
            continue
        out[str(repo["path"])] = KnownInputs(str(repo["tree"]), dict(inputs), tuple(links))
    return out


def _still(doc: Mapping[str, Any], state: Path, seed: bytes) -> None:
    """envFrom values, free service ports, cache entries and environment parts as recorded."""
    from changeloop.fingerprints import environment  # noqa: PLC0415 - kept off the no-change answer's imports

    names = list(doc["envFrom"])
    if env_from(names, secret_key(seed), os.environ) != doc["envFrom"]:
        raise Miss("an envFrom variable changed")
    for path, digest in doc.get("derivation", {}).items():
        if file_digest(Path(path)) != digest:
            raise Miss(f"{path} changed (it decides derived static analysis)")
    if doc["ports"]:
        from changeloop.services.ports import port_holder  # noqa: PLC0415 - kept off the no-change answer's imports

        if any(port_holder(int(port)) is not None for port in doc["ports"]):
            # the full path reports a leftover server even when cached
            raise Miss("a service port is taken")
    for name, stat in doc["cache"].items():
        if stat_of(state / "cache" / Path(name).name) != stat:
            raise Miss(f"cache entry {name} changed")
    environ = doc["environ"]
    if environ_values(list(environ["passEnv"]), secret_key(seed), os.environ) != environ["values"]:
        raise Miss("a variable a command gets changed (the fixed set or a passEnv)")
    for env in doc["environment"]:
        command = tuple(env["command"]) if env["command"] is not None else None
        given = command_environ(os.environ, env["passEnv"], [tuple(kv) for kv in env["env"]])
        part = environment.part(command, Path(env["checkout"]), state, given)
        if part_digest(part) != env["part"]:
            raise Miss(f"the environment of {command} changed")
    _same_inputs(doc)


def _same_inputs(doc: Mapping[str, Any]) -> None:
    """The change inputs under ``openspec/``, and the ignored paths ``inputs`` name."""
    from changeloop.fingerprints.change_inputs import change_inputs_digest  # noqa: PLC0415 - kept off the no-change answer's imports

    inputs = doc["changeInputs"]
    excluded = [Path(p) for p in inputs["excluded"]]
    root, change = Path(doc["key"]["root"]), Path(doc["key"]["changePath"])
    if change_inputs_digest(root, change, excluded) != inputs["digest"]:
        raise Miss("a file under openspec/ a check may read changed")
    for name, repo in doc["repositories"].items():
        path = Path(repo["path"])
        if excludes_digest(path) != repo["excludes"]:
            raise Miss(f"the ignore files of repository {name} changed")
        for key, found in repo["ignored"].items():
            from changeloop.fingerprints.ignored import walk_digest  # noqa: PLC0415 - kept off the no-change answer's imports

            globs = json.loads(key)
            if any(walk_digest(path, p, globs) != d for p, d in found.items()):
                raise Miss(f"an ignored file repository {name}'s inputs name changed")


def _same_digest(path: Path, digest: str) -> bool:
    try:
        data = fsio.read_regular_stat(
            path, limit=RECORD_LIMIT, what="receipt", follow_symlinks=False
        )[0]
    except FileRefused:
        return False
    return hashlib.sha256(data).hexdigest() == digest


def _same_latest(latest: Path, change_id: str, recorded: Mapping[str, Any]) -> None:
    """Every receipt of ``latest/`` the answer lists still has the recorded bytes."""
    for provider in recorded["providers"]:
        for receipt in provider["receipts"]:
            if not _same_digest(latest / receipt["file"], receipt["sha256"]):
                raise Miss(f"receipts/{change_id}/{receipt['file']} changed")


def _prepared(doc: Mapping[str, Any], run_id: str) -> Answer:
    """What to print, made while the content is still being checked (used only if it holds).

    The printed answer goes through a masker of this run's ``envFrom`` values, as
    the full path's does (the run id is new text).
    """
    from changeloop.run import runlog  # noqa: F401, PLC0415 - imported now, used once the content holds

    recorded = doc["answer"]
    placeholder = recorded["placeholder"]
    masker = Masker(os.environ[n] for n in doc["envFrom"] if os.environ.get(n))
    return Answer(
        run_id=run_id,
        json=masker.json(substitute(recorded["json"], placeholder, run_id)),
        board=masker.text(str(recorded["board"]).replace(placeholder, run_id)),
        warnings=tuple(recorded["warnings"]),
        archived=recorded["archived"],
        providers=tuple(p["name"] for p in recorded["providers"]),
        proven=bool(recorded["proven"]),
    )

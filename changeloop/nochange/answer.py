"""Answering a re-prove from the signed record, or saying why not (then the full path runs)."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import shutil
import sys
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from changeloop import fsio
from changeloop.errors import ChangeloopError, FileRefused
from changeloop.nochange.key import (
    PAYLOAD_TYPE,
    RECORD_LIMIT,
    SCHEMA,
    base_key,
    env_from,
    file_digest,
    part_digest,
    record_path,
    secret_key,
    stat_of,
)
from changeloop.nochange.record import substitute

if TYPE_CHECKING:
    from changeloop.run.carried import KnownInputs


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
) -> Answer | None:
    """The recorded answer when nothing it depends on changed, else None (run the full path).

    Never raises for a damaged, stale or foreign record. A state directory that
    must be refused (``state.check_state``) is left to the full path, which
    refuses it in the same words. ``seen`` learns the content trees computed on the
    way (checkout path -> tree), for the full path to start from; ``known`` learns the
    verified record's inputs digests (checkout path -> ``KnownInputs``), which the full
    path carries over for providers whose inputs did not change (``run.carried``).
    """
    key = base_key(root, change_id, change_path, options, config)
    try:
        return _answer(
            root, change_id, key, jobs, {} if seen is None else seen, {} if known is None else known
        )
    except _Miss as miss:
        _explain(str(miss))
    except (ChangeloopError, OSError, ValueError, KeyError, TypeError, RecursionError) as exc:
        _explain(f"{type(exc).__name__}: {exc}")
    return None


class _Miss(Exception):
    """Why the record does not answer this re-prove (the full path runs)."""


EXPLAIN = "CHANGELOOP_EXPLAIN_NOCHANGE"  # set: say on stderr why the record was not used


def _explain(reason: str) -> None:
    if os.environ.get(EXPLAIN):
        sys.stderr.write(f"no-change record not used: {reason}\n")


# PKCS#8 DER of an Ed25519 private key is this prefix and the 32-byte seed (RFC 8410).
_PKCS8_ED25519 = bytes.fromhex("302e020100300506032b657004220420")
_PEM = re.compile(
    rb"^-----BEGIN PRIVATE KEY-----\n([A-Za-z0-9+/=\n]+)-----END PRIVATE KEY-----\n?$"
)


def _workspace_seed(path: Path) -> bytes | None:
    """The workspace key's seed, read without cryptography's serialization (~10 ms of
    imports); anything but the PKCS#8 PEM ``keys.py`` writes is None (the full path then
    loads, or refuses, the key itself). ``state.check_state`` has checked its mode."""
    try:
        raw = fsio.read_regular_stat(path, limit=64 * 1024, what="key", follow_symlinks=False)[0]
    except FileRefused:
        return None
    found = _PEM.match(raw)
    if found is None:
        return None
    der = base64.b64decode(found[1].replace(b"\n", b""), validate=True)
    if len(der) != len(_PKCS8_ED25519) + 32 or not der.startswith(_PKCS8_ED25519):
        return None
    return der[len(_PKCS8_ED25519) :]


def _read(state: Path, change_id: str) -> tuple[bytes, bytes, dict[str, Any]]:
    """The record's bytes, payload and parsed payload, *not yet verified* (:func:`_verify`).

    Parsed here with the standard library alone: the DSSE module imports the
    cryptography it needs to verify (~7 ms), and the content identities start before.
    """
    path = record_path(state, change_id)
    if path is None:
        raise _Miss("no record name for this change")
    try:
        raw = fsio.read_regular_stat(
            path, limit=RECORD_LIMIT, what="no-change record", follow_symlinks=False
        )[0]
    except FileRefused as exc:
        raise _Miss(str(exc)) from exc
    envelope = json.loads(raw)
    if not isinstance(envelope, dict) or envelope.get("payloadType") != PAYLOAD_TYPE:
        raise _Miss("not a no-change record")
    payload = base64.b64decode(envelope["payload"], validate=True)
    doc = json.loads(payload)
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
        raise _Miss("a record of another schema")
    return raw, payload, doc


def _verify(state: Path, raw: bytes, payload: bytes) -> bytes:
    """The workspace key's seed, when the envelope ``raw`` (whose payload :func:`_read`
    parsed as ``payload``) verifies with it; else a ``_Miss``."""
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    from changeloop.dsse import pae, parse_envelope

    seed = _workspace_seed(state / "keys" / "local.key")
    if seed is None:
        raise _Miss("no workspace key in the form this changeloop writes")
    envelope = parse_envelope(raw)  # strict: one reading of the bytes, or a refusal
    if envelope.payload_type != PAYLOAD_TYPE or envelope.payload != payload:
        raise _Miss("the record reads two ways")
    public = Ed25519PrivateKey.from_private_bytes(seed).public_key()
    message = pae(envelope.payload_type, envelope.payload)
    for signature in envelope.signatures:
        try:
            public.verify(signature.sig, message)
        except InvalidSignature:
            continue
        return seed
    raise _Miss("the record does not verify with the workspace key")


def _answer(  # noqa: PLR0917 (one caller)
    root: Path,
    change_id: str,
    base: Mapping[str, Any],
    jobs: int,
    seen: dict[str, str],
    known: dict[str, KnownInputs],
) -> Answer | None:
    from changeloop.state import STATE, StateDir

    # The content identities (git, ~55 ms for 20,000 files, waiting on processes) run on
    # threads of their own while everything else is checked. The workspace root's starts
    # first, before the state checks, when the record (looked at, not believed) names it:
    # the root is ours, not the record's, and its content is what the full path stages
    # too. The other repositories start once the state checks passed; only their paths
    # are taken from the record before its signature is checked (git there, with a
    # temporary index, writes objects and nothing else). No tree computed is used unless
    # the record verifies.
    content = _Content(base["options"]["sandbox"])
    early: tuple[bytes, bytes, dict[str, Any]] | None = None
    try:  # any failure here is said again, in its place, once the state checks passed
        early = _read(root / STATE, change_id)
        content.start(early[2], only=root)
    except (_Miss, ChangeloopError, OSError, ValueError, KeyError, TypeError, RecursionError):
        early = None
    try:
        state = StateDir(root)  # the state checks every verb makes (a refusal: full path says it)
        raw, payload, doc = early if early is not None else _read(state.path, change_id)
        content.start(doc)
        seed = _verify(state.path, raw, payload)
    except Exception:
        content.wait()  # nothing it computed is used
        raise
    try:
        return _decide(root, change_id, state, doc, seed, base, jobs, seen, content)
    except Exception:
        # Only a miss hands the inputs digests on (run.carried, ~4 ms of imports a hit skips).
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
    content: _Content,
) -> Answer:
    """The verified record's answer when its key still holds, else a ``_Miss``.

    While ``content`` computes the content identities, this thread checks the rest
    (cache entries, environment parts, ``latest/``, ``envFrom``); the content's verdict
    comes first either way (an edited input is the usual miss), and its trees are handed
    on to the full path (``seen``) whatever missed.
    """
    from changeloop.state import ensure_gitignored, new_run_id

    if doc["key"] != base:
        content.hand_on(seen)
        changed = sorted(k for k in base if doc["key"].get(k) != base[k])
        raise _Miss(f"{', '.join(changed)} changed")
    try:
        _still(doc, state.path, seed)
        _same_latest(state.latest(change_id), change_id, doc["answer"])
        run_id = new_run_id()
        found = _prepared(doc, run_id)  # what to print, made while git runs
        content.verdict()
    except Exception:  # not an interruption: that one ends the run at once
        content.hand_on(seen)
        content.verdict()  # the content's miss is the one said, when it missed too
        raise
    # Only now: laid out while git ran, a run directory cost a miss more than it saved a
    # hit (its removal waits on the file system's journal; bench/README.md, issue 15 hF).
    ensure_gitignored(root)
    laid = _lay_out(state, change_id, doc, run_id)
    _write_run(change_id, doc, jobs, laid)
    return found


def _known_inputs(doc: Mapping[str, Any], base: Mapping[str, Any]) -> dict[str, KnownInputs]:
    """The verified record's inputs digests per checkout path, when this changeloop computes
    digests the way the record's did; a repository with a submodule carries none."""
    from changeloop.run.carried import KnownInputs

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
    from changeloop import environment

    names = list(doc["envFrom"])
    if env_from(names, secret_key(seed), os.environ) != doc["envFrom"]:
        raise _Miss("an envFrom variable changed")
    for path, digest in doc.get("derivation", {}).items():
        if file_digest(Path(path)) != digest:
            raise _Miss(f"{path} changed (it decides derived static analysis)")
    if doc["ports"]:
        from changeloop.services.ports import port_holder

        if any(port_holder(int(port)) is not None for port in doc["ports"]):
            # the full path reports a leftover server even when cached
            raise _Miss("a service port is taken")
    for name, stat in doc["cache"].items():
        if stat_of(state / "cache" / Path(name).name) != stat:
            raise _Miss(f"cache entry {name} changed")
    for env in doc["environment"]:
        command = tuple(env["command"]) if env["command"] is not None else None
        part = environment.part(command, Path(env["checkout"]), state, None)
        if part_digest(part) != env["part"]:
            raise _Miss(f"the environment of {command} changed")


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
                raise _Miss(f"receipts/{change_id}/{receipt['file']} changed")


class _Content:
    """The content identities of a record's repositories, computed on threads of their own
    (:meth:`start`); their outcome is taken on the calling thread (:meth:`verdict`,
    :meth:`hand_on`), in the record's order of repositories."""

    def __init__(self, sandbox: str) -> None:
        self._untracked = sandbox != "worktree"
        self._order: list[str] = []  # repository names in the record's order
        self._started: set[str] = set()
        self._recorded: dict[str, str] = {}  # checkout path -> recorded tree
        self._trees: dict[str, str] = {}  # checkout path -> tree computed
        self._errors: dict[str, BaseException] = {}  # name -> its miss or error
        self._threads: list[Any] = []

    def start(self, doc: Mapping[str, Any], *, only: Path | None = None) -> None:
        """Start the repositories of ``doc`` not started yet (with ``only``: the one whose
        checkout is that directory, if any)."""
        import threading

        repositories = doc["repositories"]
        if not isinstance(repositories, Mapping) or not all(
            isinstance(r, Mapping) and isinstance(r.get("path"), str) for r in repositories.values()
        ):
            raise TypeError("the record's repositories are not what this changeloop writes")
        self._order = list(repositories)
        todo = []
        for name, repo in repositories.items():
            if name in self._started:
                continue
            if only is not None and not _same_dir(repo["path"], only):
                continue
            self._started.add(name)
            self._recorded[str(Path(repo["path"]))] = repo["tree"]
            todo.append((name, repo))
        if todo:
            worker = threading.Thread(
                target=self._run, args=(todo,), name="changeloop-content", daemon=True
            )
            try:
                worker.start()
            except RuntimeError:  # no thread to be had: the same work, here and now
                self._run(todo)
                return
            self._threads.append(worker)

    def _run(self, todo: list[tuple[str, Any]]) -> None:
        for name, repo in todo:
            try:
                _same_content(name, repo, self._untracked, self._trees)
            except BaseException as exc:  # re-raised on the joining thread
                self._errors[name] = exc
                return  # the next ones are not needed: this one decided

    def wait(self) -> None:
        for worker in self._threads:
            worker.join()

    def verdict(self) -> None:
        """Wait; the first repository's miss or error (in the record's order), raised here."""
        self.wait()
        for name in self._order:
            if name in self._errors:
                raise self._errors[name]

    def hand_on(self, seen: dict[str, str]) -> None:
        """Wait; the trees computed, for the full path to start from (a miss). A tree equal
        to the recorded one was not written (``content_tree(expected=)``); it is handed on
        only when its object is still in the repository (``git gc`` may have pruned it)."""
        from changeloop.identity import git

        self.wait()
        for path, tree in self._trees.items():
            if tree == self._recorded.get(path):
                probe = git(["cat-file", "-e", f"{tree}^{{tree}}"], cwd=Path(path), check=False)
                if probe.returncode != 0:
                    continue
            seen[path] = tree


def _same_dir(recorded: Any, directory: Path) -> bool:
    """Whether the record's checkout path ``recorded`` is ``directory``."""
    try:
        return Path(recorded).samefile(directory)
    except (OSError, TypeError, ValueError):
        return False


def _same_content(
    name: str, repo: Mapping[str, Any], untracked: bool, seen: dict[str, str]
) -> None:
    """The repository's content identity (into ``seen``), and no link in it leaving it."""
    from changeloop.identity import content_tree

    path = Path(repo["path"])
    tree = content_tree(path, include_untracked=untracked, expected=repo["tree"])
    seen[str(path)] = tree
    if tree != repo["tree"]:
        raise _Miss(f"the content of repository {name} changed")
    if repo["symlinks"] and _links_leave(path, repo["symlinks"]):
        raise _Miss(f"a link of repository {name} now leaves it")


def _links_leave(path: Path, links: Sequence[str]) -> bool:
    from changeloop.fingerprint import external_symlinks

    return bool(external_symlinks(path, links))


class _Laid(NamedTuple):
    """A run directory holding the recorded receipts, before the decision is known."""

    run_id: str
    run_dir: Path
    paths: dict[str, list[str]]  # provider -> its receipts, relative to the workspace root


def _lay_out(state: Any, change_id: str, doc: Mapping[str, Any], run_id: str) -> _Laid:
    """A new ``runs/<id>/<provider>/`` per provider holding its receipts (hard links of
    ``latest/``'s identical bytes); removed again if that fails (the full path runs)."""
    run_id, run_dir = state.new_run_dir(run_id)
    try:
        latest = state.latest(change_id)
        paths: dict[str, list[str]] = {}
        for p in doc["answer"]["providers"]:
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
    return _Laid(run_id, run_dir, paths)


def _write_run(change_id: str, doc: Mapping[str, Any], jobs: int, laid: _Laid) -> None:
    """The run's ``run.json`` beside the receipts :func:`_lay_out` put there: every provider
    ``cached``, and ``"decision": "no-change"``."""
    from changeloop.runlog import RunLog

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


def _prepared(doc: Mapping[str, Any], run_id: str) -> Answer:
    """What to print, made while the content is still being checked (used only if it holds).

    The printed answer goes through a masker of this run's ``envFrom`` values, as
    the full path's does (the run id is new text).
    """
    from changeloop import runlog  # noqa: F401 (imported now, used once the content holds)
    from changeloop.masking import Masker

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


def _link_or_copy(source: Path, target: Path) -> None:
    """The receipt in the run directory: a hard link of ``latest/``'s identical bytes."""
    try:
        os.link(source, target, follow_symlinks=False)
    except OSError:
        data = fsio.read_regular_stat(
            source, limit=RECORD_LIMIT, what="receipt", follow_symlinks=False
        )[0]
        fsio.write_atomic(target, data, durable=False)

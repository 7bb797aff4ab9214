"""The no-change decision: a re-prove with nothing changed, answered from one signed record.

After a full ``prove`` whose every provider ended as a pass the cache holds
(reused, or run and stored), :func:`remember` writes
``.changeloop/decisions/<change>.json``: a DSSE envelope signed with the
workspace key over what that answer depended on (the *key*) and the answer a
full re-prove would give (every provider ``cached``). The next ``prove`` of the
change with the same options calls :func:`answer` before loading the plan: it
re-observes the key — one read of the record, the configuration files' bytes,
``envFrom`` values (as HMACs), the environment part of every command, the
cache entries, service ports, ``latest/`` receipts, and one content identity
per repository — and, when all of it is what the record says, re-lists the
receipts in a new ``runs/<id>/`` and prints the recorded answer. Anything else
(no record, a record that does not verify, any difference, any error) returns
None and the full path runs: the record is a cache, never an authority.

What the key holds, and why each part is enough, is in docs/nochange.md.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import re
import secrets
import sys
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from changeloop import __version__, fsio
from changeloop.errors import ChangeloopError, FileRefused

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    from changeloop.engine import ProveResult
    from changeloop.model import Plan
    from changeloop.run.carried import KnownInputs
    from changeloop.run.records import ProveOptions

__all__ = ["Answer", "answer", "config_digests", "option_key", "record_path", "remember"]

SCHEMA = "changeloop/no-change@1"
PAYLOAD_TYPE = "application/vnd.changeloop.no-change+json"
DECISIONS = "decisions"
RECORD_LIMIT = 4 * fsio.MIB  # the DSSE bound every envelope read obeys
CONFIG_LIMIT = 16 * fsio.MIB
CONFIG_FILES = ("evidence.yaml", "execution.yaml")
_CHANGE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,200}$")


# -- the key: what the answer depends on ----------------------------------------------
def option_key(*, sandbox: str, issuer: str, url: str | None, fail_fast: bool) -> dict[str, Any]:
    """The command-line options a cached re-prove's answer depends on.

    ``--jobs`` and ``--keep-sandbox`` are left out: with every provider cached
    nothing runs, so neither changes the answer (run.json's ``slots`` is
    written from this run's ``--jobs``).
    """
    return {"sandbox": sandbox, "issuer": issuer, "url": url, "failFast": fail_fast}


def config_digests(change_path: Path) -> dict[str, str | None]:
    """sha256 of evidence.yaml and execution.yaml as they are now (None: absent).

    Read *before* the plan is parsed: an edit racing the run makes the record's
    key older than its answer, so the record is never used (a miss, not a lie).
    """
    return {name: _file_digest(change_path / name) for name in CONFIG_FILES}


def _file_digest(path: Path) -> str | None:
    """sha256 of a file's bytes; None when absent; "unreadable" (never a digest) otherwise."""
    if not os.path.lexists(path):
        return None
    try:
        data = fsio.read_regular(path, limit=CONFIG_LIMIT, what=path.name)
    except FileRefused:
        return "unreadable"  # never equal to a digest: no record is used
    return hashlib.sha256(data).hexdigest()


def _base_key(
    root: Path,
    change_id: str,
    change_path: Path,
    options: Mapping[str, Any],
    config: Mapping[str, str | None],
) -> dict[str, Any]:
    from changeloop.formats import FINGERPRINT_FORMAT, RECEIPT_SCHEMA

    return {
        "changeloop": __version__,
        "fingerprintFormat": FINGERPRINT_FORMAT,
        "receiptSchema": RECEIPT_SCHEMA,
        "root": str(root),
        "change": change_id,
        "changePath": str(change_path),
        "options": dict(options),
        "config": dict(config),
    }


def record_path(state: Path, change_id: str) -> Path | None:
    """``.changeloop/decisions/<change>.json`` (None for an id that is no plain file name)."""
    if not _CHANGE_ID.match(change_id):
        return None
    return state / DECISIONS / f"{change_id}.json"


def _seed(key: Ed25519PrivateKey) -> bytes:
    from cryptography.hazmat.primitives import serialization

    return key.private_bytes(
        serialization.Encoding.Raw, serialization.PrivateFormat.Raw, serialization.NoEncryption()
    )


def _secret_key(seed: bytes) -> bytes:
    """The HMAC key for envFrom values in the record, derived from the workspace key's seed."""
    return hashlib.sha256(b"changeloop no-change envFrom\0" + seed).digest()


def _env_from(names: Sequence[str], secret: bytes, environ: Mapping[str, str]) -> dict[str, Any]:
    """Each name: null when unset, else an HMAC of its value (values never stored)."""
    out: dict[str, Any] = {}
    for name in names:
        value = environ.get(name)
        out[name] = (
            None
            if value is None
            else hmac.new(secret, value.encode("utf-8", "surrogatepass"), "sha256").hexdigest()
        )
    return out


def _part_digest(part: Mapping[str, Any]) -> str:
    from changeloop.jcs import canonicalize

    return hashlib.sha256(canonicalize(dict(part))).hexdigest()


def _stat_of(path: Path) -> str | None:
    """inode, size and mtime of a file we wrote atomically: any rewrite changes the inode.

    A string: nanosecond mtimes are beyond the integers RFC 8785 represents exactly.
    """
    try:
        info = os.lstat(path)
    except OSError:
        return None
    return f"{info.st_ino}:{info.st_size}:{info.st_mtime_ns}"


# -- writing the record (after a full run) ----------------------------------------------
class Observed(NamedTuple):
    """What a full run read from outside the plan, handed from the engine to :func:`remember`."""

    trees: Mapping[str, str]  # repository -> content tree the receipts name
    environments: Mapping[str, tuple[tuple[str, ...] | None, Path, Mapping[str, Any]]]
    fingerprints: Mapping[str, str]
    symlinks: Mapping[str, Sequence[str]]  # repository -> links in its content
    key: Any  # the workspace key that signed the run (None with --sign-key)
    state: Path
    # repository -> globs key -> inputs digest over its tree (run.carried), and whether
    # its content holds a submodule (then no digest is carried from the record)
    inputs: Mapping[str, Mapping[str, str]] = {}
    gitlinks: Mapping[str, bool] = {}


Render = Callable[["ProveResult"], tuple[dict[str, Any], str]]


def eligible_options(options: ProveOptions) -> bool:
    """Options under which a cached re-prove is answered from the record at all."""
    return (
        options.executor == "local"
        and options.sign_key is None
        and options.publish is None
        and options.cache_from is None
    )


def remember(
    plan: Plan,
    options: ProveOptions,
    result: ProveResult,
    *,
    config: Mapping[str, str | None],
    warnings: Sequence[str],
    render: Render,
) -> Path | None:
    """Write the change's record when this run's answer is one a cached re-prove repeats.

    ``render`` turns a result into (the ``--json`` document, the board text),
    exactly as the CLI prints them. Returns the record's path, or None when the
    run does not qualify (then any old record is removed: it no longer holds).
    """
    observed = result.observed
    if observed is None or observed.key is None:
        return None
    target = record_path(observed.state, plan.change.id)
    if target is None:
        return None
    doc = None
    if eligible_options(options) and not result.interrupted and not result.notes:
        doc = _record(plan, options, result, observed, config, warnings, render)
    if doc is None:
        _forget(target)
        return None
    from changeloop.dsse import sign_envelope
    from changeloop.jcs import canonicalize

    envelope = sign_envelope(canonicalize(doc), PAYLOAD_TYPE, observed.key)
    if len(envelope) > RECORD_LIMIT:
        _forget(target)
        return None
    try:
        target.parent.mkdir(exist_ok=True)
        fsio.write_atomic(target, envelope, durable=False)  # a cache: a lost write is a miss
    except OSError:
        return None
    return target


def _forget(target: Path) -> None:
    try:
        if target.is_file() and not target.is_symlink():
            target.unlink()
    except OSError:
        pass


def _derivation_files(plan: Plan) -> dict[str, str | None] | None:
    """The digests of the files derivation could read, or None when it reads more.

    Detection for tests and browsers reads files outside the content tree (an
    installed ``node_modules/.bin`` tool, a ``.venv``); the record observes none of
    them, so a plan that leans on derived wiring is always planned afresh. Derived
    static analysis reads only a few top-level files (``derive.STATIC_ANALYSIS_FILES``),
    tracked, ignored or absent: the record keeps their digests, so a change that
    requires ``static-analysis`` and configures its provider can be answered too.
    """
    from changeloop.detect.derive import derivation_possible, static_analysis_files

    if any(p.origin == "derived" for p in plan.providers.values()):
        return None
    if derivation_possible(plan.evidence, plan.execution, plan.repositories, static_analysis=False):
        return None
    return {
        str(path): _file_digest(path)
        for path in static_analysis_files(plan.evidence, plan.repositories)
    }


def _record(  # noqa: PLR0917 (one caller, all of it needed)
    plan: Plan,
    options: ProveOptions,
    result: ProveResult,
    observed: Observed,
    config: Mapping[str, str | None],
    warnings: Sequence[str],
    render: Render,
) -> dict[str, Any] | None:
    """The record's document, or None when this run's answer is not one to repeat."""
    from changeloop.cache import NEVER_CACHED, entry_path, load

    derivation = _derivation_files(plan)
    if derivation is None or set(observed.trees) != set(plan.repositories):
        return None
    if any(p.adapter in NEVER_CACHED for p in plan.providers.values()):
        return None
    if set(result.providers) != set(plan.providers):
        return None  # a setup pseudo-provider ran: not what a cached re-prove shows
    cache_dir = observed.state / "cache"
    receipts: dict[str, list[tuple[str, bytes]]] = {}
    cache_stats: dict[str, str] = {}
    for name, report in result.providers.items():
        fp = observed.fingerprints.get(name)
        if fp is None or report.state not in ("ran", "cached") or not report.receipts:
            return None
        if report.state == "cached" and report.origin != "local":
            return None
        files = []
        for entry in report.receipts:
            if entry.status != "pass":
                return None
            try:
                data = fsio.read_regular(plan.root / entry.path, limit=RECORD_LIMIT, what="receipt")
            except FileRefused:
                return None
            files.append((Path(entry.path).name, data))
        if load(cache_dir, fp) != [data for _, data in files]:
            return None  # the cache does not hold exactly these: a re-prove would run it
        stat = _stat_of(entry_path(cache_dir, fp))
        if stat is None:
            return None
        cache_stats[entry_path(cache_dir, fp).name] = stat
        receipts[name] = files
    placeholder = f"@@run-{secrets.token_hex(8)}@@"
    cached = _cached_form(plan, result, receipts, placeholder)
    doc, board = render(cached)
    if all(r.state == "cached" for r in result.providers.values()):
        # Self-check: this run *was* a cached re-prove, so its own answer must be the one
        # recorded, bar the run id. Any difference means the cached form drifted.
        actual, _ = render(result)
        if _substitute(doc, placeholder, result.run_id) != actual:
            return None
    from changeloop.masking import env_from_names

    names = env_from_names(plan)
    ports = _service_ports(plan)
    environments = sorted(
        {
            (json.dumps(list(cmd) if cmd is not None else None), str(where), _part_digest(part))
            for cmd, where, part in observed.environments.values()
        }
    )
    if len(observed.environments) != len(plan.providers):
        return None
    return {
        "schema": SCHEMA,
        "key": _base_key(
            plan.root,
            plan.change.id,
            plan.change.path,
            option_key(
                sandbox=options.sandbox,
                issuer=options.issuer,
                url=options.url,
                fail_fast=options.fail_fast,
            ),
            config,
        ),
        "recordedOn": datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z"),
        "repositories": {
            repo: {
                "path": str(plan.repositories[repo].path),
                "tree": tree,
                "symlinks": list(observed.symlinks.get(repo, ())),
                "gitlinks": observed.gitlinks.get(repo, True),
                "inputs": dict(sorted(observed.inputs.get(repo, {}).items())),
            }
            for repo, tree in sorted(observed.trees.items())
        },
        "environment": [
            {"command": json.loads(cmd), "checkout": where, "part": digest}
            for cmd, where, digest in environments
        ],
        "envFrom": _env_from(names, _secret_key(_seed(observed.key)), os.environ),
        "derivation": derivation,
        "ports": ports,
        "cache": cache_stats,
        "answer": {
            "placeholder": placeholder,
            "archived": (
                str(plan.change.path.relative_to(plan.root)) if plan.change.archived else None
            ),
            "warnings": list(warnings),
            "proven": cached.verdict.proven,
            "json": doc,
            "board": board,
            "providers": [
                {
                    "name": p.name,
                    "adapter": p.adapter,
                    "repository": p.repository,
                    "dependsOn": list(p.depends_on),
                    "receipts": [
                        {"file": file, "sha256": hashlib.sha256(data).hexdigest()}
                        for file, data in receipts[p.name]
                    ],
                }
                for p in plan.providers.values()
            ],
        },
    }


def _service_ports(plan: Plan) -> list[int]:
    """Ports of the services the providers use: a leftover server there is reported even
    when every provider is cached (engine._ports_taken), so the fast path checks them."""
    ports: set[int] = set()
    for provider in plan.providers.values():
        for name in provider.services:
            service = plan.services.get(name)
            port = service.readiness.port if service and service.readiness else None
            if port is not None:
                ports.add(port)
    return sorted(ports)


def _cached_form(
    plan: Plan,
    result: ProveResult,
    receipts: Mapping[str, Sequence[tuple[str, bytes]]],
    run_id: str,
) -> ProveResult:
    """The result a full re-prove with every provider reused from the cache would give.

    Mirrors ``ReceiptSink.adopt``: a reused receipt's entry carries its status,
    claims, input mode and test counts from the envelope, no reason and no
    citations; the verdict is decided again from those views (no notes: nothing
    failed to run). tests/test_nochange.py holds the two equal.
    """
    from dataclasses import replace

    from changeloop.engine import ProveResult
    from changeloop.providers import registry
    from changeloop.providers.base import TestCounts
    from changeloop.run.records import ProviderReport, ReceiptEntry
    from changeloop.verdict import ReceiptView, decide

    run_dir = plan.root / ".changeloop" / "runs" / run_id
    providers: dict[str, ProviderReport] = {}
    for provider in plan.providers.values():
        repos = registry.ADAPTERS[provider.adapter].repositories(provider, plan)
        entries = []
        for file, envelope in receipts[provider.name]:
            payload = base64.b64decode(json.loads(envelope)["payload"])
            ext = json.loads(payload)["predicate"]["changeloop"]
            tests = ext.get("tests")
            keys = ("discovered", "passed", "failed", "skipped")
            counts = (
                TestCounts(**{k: tests[k] for k in keys})
                if isinstance(tests, dict) and all(type(tests.get(k)) is int for k in keys)
                else None
            )
            claims = dict(ext.get("claims") or {})
            name = ext["provider"] or provider.name
            view = ReceiptView(
                provider=name,
                capability=ext["capability"],
                status="pass",
                repositories=repos,
                reason=None,
                claims=claims,
                input_mode=ext.get("inputMode"),
                citations={},
            )
            entries.append(
                ReceiptEntry(
                    capability=ext["capability"],
                    provider=name,
                    status="pass",
                    reason=None,
                    id="sha256:" + hashlib.sha256(payload).hexdigest(),
                    path=str((run_dir / provider.name / file).relative_to(plan.root)),
                    view=view,
                    tests=counts.to_json() if counts is not None else None,
                )
            )
        providers[provider.name] = ProviderReport(
            provider.name,
            provider.adapter,
            provider.repository,
            state="cached",
            origin="local",
            receipts=entries,
        )
    views = [e.view for r in providers.values() for e in r.receipts]
    verdict = decide(plan, views, {})
    return replace(
        ProveResult(plan, run_id, run_dir, providers, verdict, masker=result.masker),
        observed=None,
    )


def _substitute(value: Any, old: str, new: str) -> Any:
    if isinstance(value, str):
        return value.replace(old, new)
    if isinstance(value, dict):
        return {_substitute(k, old, new): _substitute(v, old, new) for k, v in value.items()}
    if isinstance(value, list):
        return [_substitute(v, old, new) for v in value]
    return value


# -- reading it (before the plan is loaded) -------------------------------------------
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
    key = _base_key(root, change_id, change_path, options, config)
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


def _verified(state: Path, change_id: str) -> tuple[dict[str, Any], bytes]:
    """The record's payload when it verifies with the workspace key, and the key's seed."""
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    from changeloop.dsse import pae, parse_envelope

    path = record_path(state, change_id)
    seed = _workspace_seed(state / "keys" / "local.key")
    if path is None or seed is None:
        raise _Miss("no workspace key in the form this changeloop writes, or no record name")
    try:
        raw = fsio.read_regular_stat(
            path, limit=RECORD_LIMIT, what="no-change record", follow_symlinks=False
        )[0]
    except FileRefused as exc:
        raise _Miss(str(exc)) from exc
    envelope = parse_envelope(raw)
    if envelope.payload_type != PAYLOAD_TYPE:
        raise _Miss("not a no-change record")
    public = Ed25519PrivateKey.from_private_bytes(seed).public_key()
    message = pae(envelope.payload_type, envelope.payload)
    for signature in envelope.signatures:
        try:
            public.verify(signature.sig, message)
        except InvalidSignature:
            continue
        doc = json.loads(envelope.payload)
        if isinstance(doc, dict) and doc.get("schema") == SCHEMA:
            return doc, seed
        raise _Miss("a record of another schema")
    raise _Miss("the record does not verify with the workspace key")


def _answer(  # noqa: PLR0917 (one caller)
    root: Path,
    change_id: str,
    base: Mapping[str, Any],
    jobs: int,
    seen: dict[str, str],
    known: dict[str, KnownInputs],
) -> Answer | None:
    from changeloop.state import StateDir, ensure_gitignored

    state = StateDir(root)  # the state checks every verb makes (a refusal: full path says it)
    doc, seed = _verified(state.path, change_id)
    known.update(_known_inputs(doc, base))
    if doc["key"] != base:
        changed = sorted(k for k in base if doc["key"].get(k) != base[k])
        raise _Miss(f"{', '.join(changed)} changed")
    # Content first: an edited input is the usual miss, and its tree is handed on to the
    # full path anyway; the 100 cache stats and latest/ reads are then not spent.
    _same_content(doc["repositories"], base["options"]["sandbox"], seen)
    _still(doc, state.path, seed)
    recorded = doc["answer"]
    latest = state.latest(change_id)
    for provider in recorded["providers"]:
        for receipt in provider["receipts"]:
            if not _same_digest(latest / receipt["file"], receipt["sha256"]):
                raise _Miss(f"receipts/{change_id}/{receipt['file']} changed")
    ensure_gitignored(root)
    return _materialize(state, change_id, doc, jobs)


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
    if _env_from(names, _secret_key(seed), os.environ) != doc["envFrom"]:
        raise _Miss("an envFrom variable changed")
    for path, digest in doc.get("derivation", {}).items():
        if _file_digest(Path(path)) != digest:
            raise _Miss(f"{path} changed (it decides derived static analysis)")
    if doc["ports"]:
        from changeloop.services.ports import port_holder

        if any(port_holder(int(port)) is not None for port in doc["ports"]):
            # the full path reports a leftover server even when cached
            raise _Miss("a service port is taken")
    for name, stat in doc["cache"].items():
        if _stat_of(state / "cache" / Path(name).name) != stat:
            raise _Miss(f"cache entry {name} changed")
    for env in doc["environment"]:
        command = tuple(env["command"]) if env["command"] is not None else None
        part = environment.part(command, Path(env["checkout"]), state, None)
        if _part_digest(part) != env["part"]:
            raise _Miss(f"the environment of {command} changed")


def _same_digest(path: Path, digest: str) -> bool:
    try:
        data = fsio.read_regular_stat(
            path, limit=RECORD_LIMIT, what="receipt", follow_symlinks=False
        )[0]
    except FileRefused:
        return False
    return hashlib.sha256(data).hexdigest() == digest


def _same_content(repositories: Mapping[str, Any], sandbox: str, seen: dict[str, str]) -> None:
    """One content identity per repository, and no link in it leaving the repository."""
    from changeloop.identity import content_tree

    for name, repo in repositories.items():
        path = Path(repo["path"])
        tree = content_tree(path, include_untracked=sandbox != "worktree")
        seen[str(path)] = tree
        if tree != repo["tree"]:
            raise _Miss(f"the content of repository {name} changed")
        if repo["symlinks"] and _links_leave(path, repo["symlinks"]):
            raise _Miss(f"a link of repository {name} now leaves it")


def _links_leave(path: Path, links: Sequence[str]) -> bool:
    from changeloop.fingerprint import external_symlinks

    return bool(external_symlinks(path, links))


def _materialize(state: Any, change_id: str, doc: Mapping[str, Any], jobs: int) -> Answer:
    """A new ``runs/<id>/`` holding the receipts (hard links of ``latest/``) and run.json.

    The printed answer goes through a masker of this run's ``envFrom`` values, as
    the full path's does (the run id is new text).
    """
    from changeloop.masking import Masker
    from changeloop.runlog import RunLog

    recorded = doc["answer"]
    run_id, run_dir = state.new_run_dir()
    latest = state.latest(change_id)
    log = RunLog(
        run_id=run_id,
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
        folder = run_dir / name
        folder.mkdir(parents=True, exist_ok=True)
        paths = []
        for receipt in p["receipts"]:
            target = folder / receipt["file"]
            _link_or_copy(latest / receipt["file"], target)
            paths.append(str(target.relative_to(state.root)))
        record = log.providers[name]
        record.slot, record.start, record.end = 0, now, now
        settled[name] = ("cached", 0, None, paths)
    log.settle(settled)
    log.write(run_dir, durable=False)  # a copy of what the signed record already holds
    placeholder = recorded["placeholder"]
    masker = Masker(os.environ[n] for n in doc["envFrom"] if os.environ.get(n))
    return Answer(
        run_id=run_id,
        json=masker.json(_substitute(recorded["json"], placeholder, run_id)),
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

"""Load ``execution.yaml`` (version 1): how to prove a change.

Validated against ``schemas/execution-v1.json`` and frozen into
:class:`changeloop.model.Execution`. Defaults that need no plan (capability,
timeout, trusted keys) are resolved here; the rest is ``changeloop.plan``'s job::

    execution = load_execution(change.path / "execution.yaml")
    execution.providers["test"].keys   # the keys the user actually wrote
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal, cast

from changeloop.config.schema import check_version, position, schema_problems
from changeloop.config.yamlio import load_yaml
from changeloop.errors import ConfigError, FileRefused, Problem
from changeloop.fsio import KIB, read_regular
from changeloop.marks import Document
from changeloop.model import (
    DEFAULT_TIMEOUT_MS,
    Execution,
    InputMode,
    Provider,
    Readiness,
    Service,
    TrustedKey,
    default_capability,
)

READS = 1
SCHEMA = "execution-v1.json"
# How a publicKeyFile is read: (the path execution.yaml names, resolved beside it) -> bytes,
# or FileRefused. The checkout's disk by default; another git revision's tree for trust.
KeyReader = Callable[[Path], bytes]
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
_PORT = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*://(?:[^@/]*@)?(\[[^\]]*\]|[^:/?#]*)(?::([0-9]+))?")


def load_execution(path: Path, display: str | None = None) -> Execution:
    """Read, validate and freeze one execution.yaml; ConfigError lists every problem."""
    return execution_from_document(load_yaml(path, display))


def parse_max_age(value: int | str) -> int:
    """``3600``, ``"12h"``, ``"7d"`` → seconds (the schema has checked the shape)."""
    if isinstance(value, int):
        return value
    return int(value[:-1]) * _UNITS[value[-1]]


def literal_port(url: str) -> int | None:
    """The port written in the URL itself, or None (a default port is not literal)."""
    match = _PORT.match(url)
    if not match or match.group(2) is None:
        return None
    port = int(match.group(2))
    return port if 0 < port < 65536 else None


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _env(raw: dict[str, Any] | None) -> dict[str, str]:
    return {k: _text(v) for k, v in (raw or {}).items()}


def _argv(raw: list[Any] | None) -> tuple[str, ...] | None:
    return None if raw is None else tuple(_text(v) for v in raw)


def read_key_file(path: Path) -> bytes:
    """A ``publicKeyFile`` from disk: a regular file, read without blocking, capped."""
    return read_regular(path, limit=64 * KIB, what="publicKeyFile")


def execution_from_document(doc: Document, *, read_key: KeyReader = read_key_file) -> Execution:
    """Validate and freeze ``doc``; ``read_key`` reads the key files it names."""
    check_version(doc, file="execution.yaml", reads=READS)
    problems = schema_problems(doc, SCHEMA, family="execution", version=READS)
    if problems:
        raise ConfigError(problems)
    data: dict[str, Any] = doc.data
    base = doc.path.parent
    providers: dict[str, Provider] = {}
    for name, body in (data.get("providers") or {}).items():
        providers[name] = _provider(name, body or {}, doc, base, problems, read_key=read_key)
    services = {
        name: _service(name, body, doc) for name, body in (data.get("services") or {}).items()
    }
    setup = {
        repo: tuple(_argv(cmd) or () for cmd in (body or {}).get("setup") or ())
        for repo, body in (data.get("repositories") or {}).items()
    }
    repos = data.get("repositories") or {}
    entry_points = {
        repo: tuple(str(p) for p in (body or {}).get("entryPoints") or ())
        for repo, body in repos.items()
        if (body or {}).get("entryPoints")
    }
    entry_locations = {
        repo: doc.location(("repositories", repo, "entryPoints"), key=True) for repo in entry_points
    }
    if problems:
        raise ConfigError(sorted(problems, key=position))
    return Execution(
        path=doc.path,
        version=READS,
        providers=providers,
        services=services,
        setup=setup,
        entry_points=entry_points,
        entry_point_locations=entry_locations,
        marks=doc,
    )


def _trusted(
    name: str,
    role: Literal["ci", "authority"],
    body: dict[str, Any],
    *,
    doc: Document,
    base: Path,
    problems: list[Problem],
    read_key: KeyReader,
) -> TrustedKey | None:
    where = ("providers", name, role)
    label = body.get("issuer") if role == "ci" else body.get("name")
    inline, file = body.get("publicKey"), body.get("publicKeyFile")
    if (inline is None) == (file is None):
        problems.append(
            Problem(
                code="public_key_choice",
                message=f"{role} of provider {name!r} needs exactly one of publicKey or"
                " publicKeyFile",
                location=doc.location(where),
                fix="give the PEM inline (publicKey) or a path "
                "relative to execution.yaml (publicKeyFile)",
                providers=(name,),
            )
        )
        return None
    if inline is not None:
        return TrustedKey(role=role, name=str(label), public_key_pem=str(inline), source="inline")
    key_path = base / str(file)
    try:
        pem = read_key(key_path).decode("utf-8")
    except (FileRefused, UnicodeDecodeError) as exc:
        problems.append(
            Problem(
                code="public_key_file_missing",
                message=f"publicKeyFile {file!r} of provider {name!r} cannot be read "
                f"({getattr(exc, 'reason', None) or exc})",
                location=doc.location((*where, "publicKeyFile")),
                fix="commit the PEM next to execution.yaml, or fix the path (relative to it)",
                providers=(name,),
            )
        )
        return None
    return TrustedKey(role=role, name=str(label), public_key_pem=pem, source=str(key_path))


def _provider(
    name: str,
    body: dict[str, Any],
    doc: Document,
    base: Path,
    problems: list[Problem],
    *,
    read_key: KeyReader,
) -> Provider:
    adapter = str(body.get("adapter") or "command")
    keys: list[TrustedKey] = []
    roles: tuple[Literal["ci", "authority"], ...] = ("ci", "authority")
    for role in roles:
        if role in body:
            key = _trusted(
                name, role, body[role], doc=doc, base=base, problems=problems, read_key=read_key
            )
            if key is not None:
                keys.append(key)
    max_age = body.get("maxAge")
    return Provider(
        name=name,
        adapter=adapter,
        capability=str(body.get("capability") or default_capability(name, adapter)),
        repository=body.get("repository"),
        command=_argv(body.get("command")),
        timeout_ms=int(body.get("timeoutMs", DEFAULT_TIMEOUT_MS)),
        env=_env(body.get("env")),
        env_from=tuple(body.get("envFrom") or ()),
        pass_env=tuple(body.get("passEnv") or ()),
        resources=tuple(body.get("resources") or ()),
        resources_declared="resources" in body,
        depends_on=tuple(body.get("dependsOn") or ()),
        services=tuple(body.get("services") or ()),
        inputs=tuple(body.get("inputs") or ()),
        artifacts=tuple(body.get("artifacts") or ()),
        claims=tuple(body.get("claims") or ()),
        report=body.get("report"),
        format=body.get("format"),
        minimum=int(body.get("minimum", 1)),
        discovery_provider=body.get("discoveryProvider"),
        project=body.get("project"),
        outputs=tuple(body.get("outputs") or ()),
        input_mode=cast("InputMode", body.get("inputMode", "browser-automation")),
        allow_flaky=bool(body.get("allowFlaky", False)),
        envelope=bool(body.get("envelope", False)),
        contract=dict(body.get("contract") or {}),
        trusted_keys=tuple(keys),
        issuer=(body.get("ci") or {}).get("issuer"),
        receipts=body.get("receipts"),
        max_age_s=None if max_age is None else parse_max_age(max_age),
        accepts=tuple(body.get("accepts") or ()),
        threshold=None if body.get("threshold") is None else float(body["threshold"]),
        max_mutants=None if body.get("maxMutants") is None else int(body["maxMutants"]),
        workdir=body.get("workdir"),
        origin="configured",
        keys=frozenset(body),
        location=doc.location(("providers", name), key=True),
    )


def _service(name: str, body: dict[str, Any], doc: Document) -> Service:
    readiness: Readiness | None = None
    probe = body.get("readiness")
    if probe is not None:
        expect = probe.get("expect") or {}
        header = expect.get("header")
        readiness = Readiness(
            url=probe["url"],
            port=literal_port(probe["url"]),
            body=expect.get("body"),
            body_regex=expect.get("bodyRegex"),
            header=(header["name"], header["value"]) if header else None,
            timeout_ms=int(probe.get("timeoutMs", 30_000)),
            location=doc.location(("services", name, "readiness"), key=True),
        )
    return Service(
        name=name,
        repository=body.get("repository"),
        command=_argv(body["command"]) or (),
        readiness=readiness,
        env=_env(body.get("env")),
        env_from=tuple(body.get("envFrom") or ()),
        pass_env=tuple(body.get("passEnv") or ()),
        location=doc.location(("services", name), key=True),
    )

"""``evidence init``: render derived providers into execution.yaml without losing anything.

ruamel.yaml's round-trip mode is used because it keeps the user's comments,
key order and quoting when we add providers; PyYAML would rewrite the file and
drop every comment. Only high-confidence providers are written, only under
names the file does not already use, and never where an existing provider
already covers the same capability in the same repository.
"""

from __future__ import annotations

import difflib
import io
import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.scalarstring import SingleQuotedScalarString

from changeloop.detect.coverage import provider_covers
from changeloop.detect.types import ChangeContext
from changeloop.errors import ConfigError, Location, Problem
from changeloop.model import Provider, default_capability


@dataclass(frozen=True)
class InitResult:
    path: Path
    before: str
    after: str
    added: tuple[str, ...]  # provider names written
    skipped_low: tuple[tuple[str, str], ...]  # (provider, evidence) left out: low confidence
    kept: tuple[str, ...]  # derived names already present in execution.yaml

    @property
    def diff(self) -> str:
        name = self.path.name
        return "".join(
            difflib.unified_diff(
                self.before.splitlines(keepends=True),
                self.after.splitlines(keepends=True),
                fromfile=f"a/{name}",
                tofile=f"b/{name}",
            )
        )


def _yaml() -> YAML:
    yml = YAML(typ="rt")
    yml.preserve_quotes = True
    yml.indent(mapping=2, sequence=4, offset=2)
    yml.width = 4096
    return yml


def _text(value: str) -> str:
    """``value`` quoted when a YAML reader could take it for something other than text.

    changeloop reads YAML 1.2 (``yes`` is a string), but a YAML 1.1 reader (PyYAML,
    older CI tools) reads ``yes``, ``on``, ``1_000`` as booleans and numbers: every
    such string is written quoted, so the file means the same to both.
    """
    from changeloop.config.yaml_core import resolves_to_text  # noqa: PLC0415 - config.yaml_core pulls in yaml; only quoting needs it

    if resolves_to_text(value) and resolves_to_text(value, yaml11=True):
        return value
    quoted: str = SingleQuotedScalarString(value)
    return quoted


def _flow(items: tuple[str, ...]) -> CommentedSeq:
    seq = CommentedSeq(_text(i) for i in items)
    seq.fa.set_flow_style()
    return seq


def provider_yaml(provider: Provider, *, implicit_repository: bool = False) -> CommentedMap:
    """execution.yaml keys for one derived provider (only what differs from defaults).

    ``implicit_repository``: the change has the one repository evidence.yaml leaves
    unnamed, which a provider without ``repository`` runs in anyway.
    """
    out = CommentedMap()
    out["adapter"] = provider.adapter
    if provider.capability != default_capability(provider.name, provider.adapter):
        out["capability"] = provider.capability
    if provider.repository is not None and not implicit_repository:
        out["repository"] = _text(provider.repository)
    if provider.workdir:
        out["workdir"] = _text(provider.workdir)
    if provider.command:
        out["command"] = _flow(provider.command)
    if provider.report:
        out["report"] = _text(provider.report)
    if provider.format:
        out["format"] = _text(provider.format)
    if provider.discovery_provider:
        out["discoveryProvider"] = _text(provider.discovery_provider)
    if provider.depends_on:
        out["dependsOn"] = _flow(provider.depends_on)
    if provider.outputs:
        out["outputs"] = _flow(provider.outputs)
    if provider.services:
        out["services"] = _flow(provider.services)
    if provider.env:
        env = CommentedMap((_text(k), _text(v)) for k, v in provider.env.items())
        env.fa.set_flow_style()
        out["env"] = env
    if provider.pass_env:
        out["passEnv"] = _flow(provider.pass_env)
    return out


def plan_init(ctx: ChangeContext, derived: Mapping[str, tuple[Provider, str]]) -> InitResult:
    """What ``init`` would write; nothing touches the disk here."""
    path = ctx.change.path / "execution.yaml"
    before = path.read_text(encoding="utf-8") if path.is_file() else ""
    yml = _yaml()
    try:
        doc: Any = yml.load(before) if before.strip() else None
    except Exception as exc:  # ruamel raises many unrelated types for bad YAML
        raise ConfigError(
            Problem("yaml_invalid", f"cannot edit execution.yaml: {exc}", Location(str(path)))
        ) from exc
    if doc is None:
        doc = CommentedMap()
        doc["version"] = 1
    if not isinstance(doc, CommentedMap):
        raise ConfigError(
            Problem("yaml_invalid", "execution.yaml is not a mapping", Location(str(path)))
        )
    providers = doc.get("providers")
    if providers is None:
        providers = CommentedMap()
        doc["providers"] = providers
    existing = dict(ctx.execution.providers) if ctx.execution else {}
    covered: set[tuple[str, str]] = set()
    for provider in existing.values():
        covered |= provider_covers(provider, ctx.repositories)
    implicit = not ctx.evidence.declared_repositories and len(ctx.repositories) == 1
    added: list[str] = []
    skipped: list[tuple[str, str]] = []
    kept: list[str] = []
    for name, (provider, why) in derived.items():
        if name in providers or name in existing:
            kept.append(name)
            continue
        if provider.confidence != "high":
            skipped.append((name, why))
            continue
        mine = provider_covers(provider, ctx.repositories)
        if mine and mine <= covered:
            kept.append(name)
            continue
        providers[name] = provider_yaml(provider, implicit_repository=implicit)
        providers.yaml_set_comment_before_after_key(
            name, before=f"derived by `changeloop evidence init` from {why}", indent=2
        )
        added.append(name)
    buf = io.StringIO()
    yml.dump(doc, buf)
    after = buf.getvalue() if added or not before else before
    return InitResult(path, before, after, tuple(added), tuple(skipped), tuple(kept))


def write_atomic(path: Path, text: str) -> None:
    """Write, fsync, rename: an interrupted init never leaves half a file."""
    fd, tmp = tempfile.mkstemp(prefix=".execution-", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        Path(tmp).replace(path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def providers_snippet(
    providers: Mapping[str, Provider], *, new_file: bool, implicit_repository: bool
) -> str:
    """The execution.yaml text that adds ``providers`` (a whole file when ``new_file``),
    written exactly as ``init --write`` writes providers."""
    doc = CommentedMap()
    if new_file:
        doc["version"] = 1
    block = CommentedMap()
    for name, provider in providers.items():
        block[name] = provider_yaml(provider, implicit_repository=implicit_repository)
    doc["providers"] = block
    buf = io.StringIO()
    _yaml().dump(doc, buf)
    return buf.getvalue()

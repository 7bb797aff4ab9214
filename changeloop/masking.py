"""One masker for a run: every ``envFrom`` value, blanked from everything changeloop writes.

Process output was already redacted as it streamed (``process_output``); text
read back from reports was not, and a test asserting on a token put it into a
signed receipt. So the run holds one :class:`Masker` of all ``envFrom``
values of the plan (providers and services) and passes every string it writes
through it — logs, tails, findings, reasons, test names, copied reports,
receipts, ``--json`` and the board (docs/threat-model.md)::

    masker = Masker.from_plan(plan)
    masker.text("token=s3cr3t-value")        # "token=***"
    masker.outcome(outcome)                   # every string field of an Outcome

Values shorter than :data:`MIN_LENGTH` characters are not masked (they would
blank ordinary words); preflight warns about them (docs/design.md).
"""

from __future__ import annotations

import json
import os
import weakref
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from changeloop.passenv import passed_names, secret_like

if TYPE_CHECKING:
    from changeloop.model import Plan, Provider, Service
    from changeloop.outcome import Finding, Outcome

__all__ = ["MASK", "MIN_LENGTH", "Masker", "env_from_names", "masked_names", "short_values"]

MASK = "***"
MIN_LENGTH = 8
# Keys whose values are digests or ids: never secret-bearing, and masking one
# would break the receipt schema (a 40-hex tree cannot hold "***").
_DIGEST_KEYS = frozenset({"fingerprint", "wiring", "gitTree", "tree", "head", "sha256", "id"})


# The last plan asked about and its answer, one slot per question (a plan is frozen;
# one read of the slot: another thread may replace it meanwhile).
_Slot = list["tuple[weakref.ref[Plan], tuple[str, ...]] | None"]
_LAST_NAMES: _Slot = [None]
_LAST_PATTERNS: _Slot = [None]


def _xml_escape(value: str, entities: Mapping[str, str] | None = None) -> str:
    """``xml.sax.saxutils.escape`` (whose module imports urllib.request, slow at start)."""
    value = value.replace("&", "&amp;").replace(">", "&gt;").replace("<", "&lt;")
    for char, entity in (entities or {}).items():
        value = value.replace(char, entity)
    return value


def _of_plan(
    slot: _Slot, plan: Plan, names: Callable[[Provider | Service], Iterable[str]]
) -> tuple[str, ...]:
    """The sorted union of ``names`` over the plan's providers and services, kept for the
    last plan asked: asked once per job, a run of N providers does not walk all N each time."""
    last = slot[0]
    if last is not None and last[0]() is plan:
        return last[1]
    wired: list[Provider | Service] = [*plan.providers.values(), *plan.services.values()]
    found = tuple(sorted({n for one in wired for n in names(one)}))
    slot[0] = (weakref.ref(plan), found)
    return found


def env_from_names(plan: Plan) -> tuple[str, ...]:
    """Every variable any provider or service of the plan inherits through ``envFrom``."""
    return _of_plan(_LAST_NAMES, plan, lambda one: one.env_from)


def _pass_env_patterns(plan: Plan) -> tuple[str, ...]:
    """Every ``passEnv`` name or glob of the plan's providers and services."""
    return _of_plan(_LAST_PATTERNS, plan, lambda one: one.pass_env)


def masked_names(plan: Plan, environ: Mapping[str, str]) -> tuple[str, ...]:
    """Every ``envFrom`` name, plus each variable of ``environ`` a ``passEnv`` of the plan
    passes whose name is secret-like (``*TOKEN*``, …): its value is masked too."""
    patterns = _pass_env_patterns(plan)
    if not patterns:
        return env_from_names(plan)
    passed = passed_names(environ, patterns)
    return tuple(sorted({*env_from_names(plan), *(n for n in passed if secret_like(n))}))


def short_values(plan: Plan, environ: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """Names of ``envFrom`` variables whose value is set but too short to be masked."""
    env = os.environ if environ is None else environ
    return tuple(n for n in env_from_names(plan) if 0 < len(env.get(n, "")) < MIN_LENGTH)


class Masker:
    """Replaces every secret value (and its JSON and XML spellings) by ``***``."""

    def __init__(self, values: Iterable[str]) -> None:
        kept = {v for v in values if len(v) >= MIN_LENGTH}
        self.secrets: tuple[str, ...] = tuple(sorted(kept, key=lambda v: (-len(v), v)))
        spellings: set[str] = set()
        for value in kept:
            spellings.add(value)
            spellings.add(json.dumps(value)[1:-1])  # as it appears inside a JSON string
            spellings.add(json.dumps(value, ensure_ascii=False)[1:-1])
            spellings.add(_xml_escape(value, {'"': "&quot;", "'": "&apos;"}))  # inside XML
            spellings.add(_xml_escape(value))
        self._text = tuple(sorted(spellings, key=lambda v: (-len(v), v)))
        self._bytes = tuple(s.encode("utf-8") for s in self._text)

    @classmethod
    def from_plan(cls, plan: Plan, environ: Mapping[str, str] | None = None) -> Masker:
        env = os.environ if environ is None else environ
        return cls(env[n] for n in masked_names(plan, env) if env.get(n))

    def __bool__(self) -> bool:
        return bool(self.secrets)

    def text(self, value: str) -> str:
        for secret in self._text:
            if secret in value:
                value = value.replace(secret, MASK)
        return value

    def optional(self, value: str | None) -> str | None:
        return None if value is None else self.text(value)

    def data(self, value: bytes) -> bytes:
        for secret in self._bytes:
            if secret in value:
                value = value.replace(secret, MASK.encode())
        return value

    def json(self, value: Any, key: str | None = None) -> Any:
        """A copy of a JSON-able value with every string (and object key) masked."""
        if not self:
            return value
        if isinstance(value, str):
            return value if key in _DIGEST_KEYS else self.text(value)
        if isinstance(value, Mapping):
            return {self.text(str(k)): self.json(v, str(k)) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self.json(v, key) for v in value]
        return value

    def finding(self, f: Finding) -> Finding:
        return replace(
            f, kind=self.text(f.kind), message=self.text(f.message), file=self.optional(f.file)
        )

    def outcome(self, o: Outcome) -> Outcome:
        """Every string an Outcome carries into a receipt, a view or ``--json``."""
        if not self:
            return o
        return replace(
            o,
            reason=self.optional(o.reason),
            claims={self.text(k): v for k, v in o.claims.items()},
            passed_tests=tuple(self.text(t) for t in o.passed_tests),
            failed_tests=tuple(self.text(t) for t in o.failed_tests),
            findings=tuple(self.finding(f) for f in o.findings),
            command=None if o.command is None else tuple(self.text(a) for a in o.command),
            details=self.json(dict(o.details)),
            url=self.optional(o.url),
        )

    def copy_file(self, source: Path, dest: Path, *, limit: int = 64 * 1024 * 1024) -> None:
        """Copy a report for people, masked before a byte of it is stored.

        The report the tool wrote is changeloop's artifact (it is deleted before
        each run): when it holds a secret it is masked where it lies too, so no
        file of the workspace keeps the value in clear.
        """
        with source.open("rb") as handle:
            data = handle.read(limit)
        masked = self.data(data)
        dest.write_bytes(masked)
        if masked != data:
            tmp = source.with_name(f".{source.name}.masked{os.getpid()}")
            tmp.write_bytes(masked)
            tmp.replace(source)

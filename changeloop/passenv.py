"""What of the caller's environment a provider, its setup and its services get.

Only a small fixed set (:data:`ALWAYS`: ``PATH``, ``HOME``, ``USER``, ``LANG``,
``LC_*``, ``TZ``, ``TMPDIR``, ``TERM``, ``CI``) plus what the wiring names —
``env`` (literal values), ``envFrom`` (secrets) and ``passEnv`` (names or globs,
tox's ``pass_env``). Anything else (``AWS_SECRET_ACCESS_KEY``, ``MODE``) never
reaches the command, so it cannot decide a result the fingerprint does not see.
Every executor applies the same filter where it builds a process environment
(:func:`strict_environ`); the fingerprint binds every passed value
(:func:`passed_values`), a secret-like ``passEnv`` name (``*TOKEN*``, ``*SECRET*``,
``*PASSWORD*``, ``*KEY*``, ``*CREDENTIAL*``) as a keyed HMAC, like ``envFrom``::

    strict_environ(os.environ, pass_env=("MODE", "APP_*"), env_from=("DB_URL",))
    # {"PATH": ..., "HOME": ..., "MODE": "ok", "APP_X": "1", "DB_URL": "..."}

A run reads the environment once, when it starts (:class:`Snapshot`): every
cut of it is made from that one copy, once per distinct wiring.
"""

from __future__ import annotations

import fnmatch
import hashlib
import hmac
import re
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache
from types import MappingProxyType

__all__ = [
    "ALWAYS",
    "Snapshot",
    "command_environ",
    "passed_names",
    "passed_values",
    "passes",
    "secret_like",
    "strict_environ",
]

# The variables every command gets: where it runs and how it speaks, never what it decides
# beyond that (each value still counts in the fingerprint).
ALWAYS = ("PATH", "HOME", "USER", "LANG", "LC_*", "TZ", "TMPDIR", "TERM", "CI")
_SECRET = re.compile(r"TOKEN|SECRET|PASSWORD|KEY|CREDENTIAL", re.IGNORECASE)


def secret_like(name: str) -> bool:
    """Whether a variable's name says it holds a secret (the preflight rule for ``env``)."""
    return _SECRET.search(name) is not None


@lru_cache(maxsize=256)
def _matcher(patterns: tuple[str, ...]) -> re.Pattern[str]:
    """One regex for a set of names and globs (case-sensitive, as environments are)."""
    parts = [fnmatch.translate(p) for p in patterns]
    return re.compile("|".join(f"(?:{p})" for p in parts) or "(?!)")


def passes(name: str, pass_env: Sequence[str] = ()) -> bool:
    """Whether ``name`` reaches a command wired with ``pass_env`` (``env``/``envFrom`` aside)."""
    return _matcher((*ALWAYS, *pass_env)).fullmatch(name) is not None


def passed_names(
    environ: Iterable[str], pass_env: Sequence[str] = (), env_from: Sequence[str] = ()
) -> list[str]:
    """The names of ``environ`` a command gets: the fixed set, ``passEnv``, ``envFrom``."""
    match = _matcher((*ALWAYS, *pass_env)).fullmatch
    named = set(env_from)
    return sorted(n for n in environ if n in named or match(n) is not None)


def strict_environ(
    environ: Mapping[str, str], pass_env: Sequence[str] = (), env_from: Sequence[str] = ()
) -> dict[str, str]:
    """``environ`` cut down to what a command wired this way may see (values as they are)."""
    match = _matcher((*ALWAYS, *pass_env)).fullmatch
    named = set(env_from)
    return {k: v for k, v in environ.items() if k in named or match(k) is not None}


class Snapshot:
    """The environment as a run found it when it started, and its cuts, each made once.

    A run's processes all start from this one copy (nothing in changeloop changes the
    environment during a run); a cut is shared by every provider wired the same way,
    read-only so that no one of them changes what another gets.
    """

    def __init__(self, environ: Mapping[str, str]) -> None:
        self.environ: Mapping[str, str] = MappingProxyType(dict(environ))
        self._cuts: dict[tuple[tuple[str, ...], tuple[str, ...]], Mapping[str, str]] = {}

    def cut(self, pass_env: Sequence[str] = (), env_from: Sequence[str] = ()) -> Mapping[str, str]:
        """:func:`strict_environ` of the snapshot for this wiring (the same object each time)."""
        key = (tuple(pass_env), tuple(env_from))
        found = self._cuts.get(key)
        if found is None:
            found = self._cuts[key] = MappingProxyType(strict_environ(self.environ, *key))
        return found


def passed_values(
    environ: Mapping[str, str], pass_env: Sequence[str], hmac_key: bytes
) -> dict[str, str]:
    """Name -> what the fingerprint holds of each passed variable (``envFrom`` aside: it has
    its own key). A plain value, or for a secret-like name ``hmac:<hex>`` keyed by the
    workspace: the fixed set and ``passEnv`` are configuration, a token is not."""
    match = _matcher((*ALWAYS, *pass_env)).fullmatch
    out: dict[str, str] = {}
    for name in sorted(environ):
        if match(name) is None:
            continue
        value = environ[name]
        if secret_like(name):
            digest = hmac.new(
                hmac_key, f"passEnv\0{name}\0{value}".encode("utf-8", "surrogatepass"), "sha256"
            ).hexdigest()
            out[name] = f"hmac:{digest}"
        else:
            out[name] = value
    return out


def digest_of(values: Mapping[str, str]) -> str:
    """sha256 of what :func:`passed_values` gave (for records that keep no values)."""
    text = "\0".join(f"{k}={v}" for k, v in sorted(values.items()))
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def command_environ(
    environ: Mapping[str, str], pass_env: Sequence[str], literal: Iterable[tuple[str, str]]
) -> dict[str, str]:
    """The environment a command wired with ``pass_env`` and literal ``env`` gets, secrets
    (``envFrom``) left out: what its executables are resolved and asked in."""
    return {**strict_environ(environ, pass_env), **dict(literal)}

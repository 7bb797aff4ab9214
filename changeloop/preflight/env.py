"""Preflight of ``env`` and ``command``: secrets come from ``envFrom``; every word is a C string.

A secret-like name must come from ``envFrom``, never a literal. A process gets
its argv and environment as C strings, which end at the first NUL byte: such
a word could only be cut short or refused when the command starts, so it is
refused here, at its line.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

from changeloop.errors import Location, Problem

SECRET_NAME = re.compile(r"TOKEN|SECRET|PASSWORD|KEY|CREDENTIAL", re.IGNORECASE)


def secrets(
    env: dict[str, str],
    owner: str,
    locate: Callable[..., Location | None],
    providers: tuple[str, ...],
) -> Iterable[Problem]:
    """A literal value under a secret-like name would be stored in execution.yaml."""
    for var, value in env.items():
        if value and SECRET_NAME.search(var):
            where = locate("env", var)
            yield Problem(
                "secret_in_env",
                f"{owner} sets {var} to a literal value; secret-like "
                "names must not be stored in execution.yaml",
                where,
                fix=f"remove it from env and add {var} to envFrom (the value is "
                "inherited and redacted from logs)",
                providers=providers,
            )


def c_strings(
    command: tuple[str, ...] | None,
    env: dict[str, str],
    owner: str,
    locate: Callable[..., Location | None],
    providers: tuple[str, ...],
) -> Iterable[Problem]:
    """A NUL in a command word or an env value (the schema refuses odd env names)."""
    for index, word in enumerate(command or ()):
        if "\0" in word:
            yield Problem(
                "nul_in_command",
                f"{owner}: command word {index} holds a NUL byte (\\0), which no program"
                " can receive",
                locate("command", index),
                fix="remove the \\0 escape from the command",
                providers=providers,
            )
    for name, value in env.items():
        if "\0" in value:
            yield Problem(
                "bad_env_entry",
                f"{owner}: env {name!r} holds a NUL byte (\\0), which no process can receive",
                locate("env", name),
                fix=f"remove the \\0 escape from the value of {name}",
                providers=providers,
            )

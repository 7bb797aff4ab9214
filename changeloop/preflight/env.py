"""Preflight of ``env``: a secret-like name must come from ``envFrom``, never a literal."""

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

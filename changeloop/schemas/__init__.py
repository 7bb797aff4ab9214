"""JSON Schemas shipped with the package, loaded once by file name."""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # imported when a validator is first asked for (a slow import at start-up)
    from jsonschema import Draft202012Validator


@cache
def load(name: str) -> dict[str, Any]:
    text = resources.files(__package__).joinpath(name).read_text(encoding="utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema


@cache
def validator(name: str) -> Draft202012Validator:
    from jsonschema import Draft202012Validator  # noqa: PLC0415 - jsonschema is heavy; only a validation needs it

    return Draft202012Validator(load(name))


def validate_named(name: str, data: Any) -> str | None:
    """None when ``data`` fits schema ``name``, else the first problem in words."""
    errors = sorted(validator(name).iter_errors(data), key=lambda e: list(e.absolute_path))
    if not errors:
        return None
    first = errors[0]
    where = "/".join(str(p) for p in first.absolute_path) or "(top level)"
    return f"{where}: {first.message}"

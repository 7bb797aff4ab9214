"""The YAML 1.2 core schema for PyYAML's composer: which plain scalars are not text.

OpenSpec reads YAML 1.2: ``yes``/``no``/``on``/``off``, ``1_000``, ``1:30`` and
dates stay strings, where PyYAML (YAML 1.1) makes booleans, numbers and dates of
them. :data:`LOADER` composes nodes with libyaml when PyYAML has it, tagging plain
scalars by the core schema; ``config/yamlio.py`` turns the nodes into values.
"""

from __future__ import annotations

import re
from typing import Any

import yaml

__all__ = ["LOADER", "TAG", "CoreResolver", "resolves_to_text"]

TAG = "tag:yaml.org,2002:"

# libyaml's composer when PyYAML was built with it (same nodes and marks, ~10x faster)
_BASE_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

# Only these plain scalars are not strings (the YAML 1.2 core schema).
_CORE: tuple[tuple[str, str, str], ...] = (
    ("null", r"^(?:~|null|Null|NULL|)$", "~nN"),
    ("bool", r"^(?:true|True|TRUE|false|False|FALSE)$", "tTfF"),
    ("int", r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$", "-+0123456789"),
    (
        "float",
        r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
        r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$",
        "-+.0123456789",
    ),
)


class CoreResolver(yaml.resolver.BaseResolver):
    """Implicit tags of the YAML 1.2 core schema (nothing else is implicit)."""

    yaml_implicit_resolvers: dict[Any, Any] = {}  # noqa: RUF012 (PyYAML's class registry)


for _kind, _pattern, _first in _CORE:
    CoreResolver.add_implicit_resolver(f"{TAG}{_kind}", re.compile(_pattern), list(_first))
CoreResolver.add_implicit_resolver(f"{TAG}null", re.compile(r"^$"), [""])
# Not in the core schema: recognised only so that a merge key is refused by name.
CoreResolver.add_implicit_resolver(f"{TAG}merge", re.compile(r"^<<$"), ["<"])

_STR = f"{TAG}str"


class CoreLoader(_BASE_LOADER):  # type: ignore[misc]
    """PyYAML's safe composer, resolving plain scalars by the core schema alone."""

    yaml_implicit_resolvers = CoreResolver.yaml_implicit_resolvers


LOADER = CoreLoader


def resolves_to_text(value: str, *, yaml11: bool = False) -> bool:
    """True when ``value``, written as a plain scalar, reads back as the same string.

    ``yaml11``: ask a YAML 1.1 reader instead (PyYAML's, where ``yes`` is true).
    """
    resolver = yaml.resolver.Resolver() if yaml11 else CoreResolver()
    tag = resolver.resolve(yaml.ScalarNode, value, (True, False))  # type: ignore[no-untyped-call]
    return bool(tag == _STR)

"""A certain pass of our own configuration schemas, decided without jsonschema.

Validating a 1000-provider execution.yaml with jsonschema took ~100 ms, and
importing it ~45 ms, on every ``prove`` of a new or edited file. Nearly every
file passes, and a pass needs no error message. :func:`passes` compiles the
schema's keywords into plain checks that answer *certainly valid* or *ask
jsonschema*: any doubt (a keyword it does not know, a float where an integer
is wanted, list items it cannot compare for uniqueness) is the second answer,
so every error, and its message, still comes from jsonschema (``schema.py``).

    passes(doc.data, "execution-v1.json")   # True: jsonschema would find no error
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from functools import cache
from typing import Any

from changeloop import schemas

__all__ = ["passes"]

Check = Callable[[Any], bool]

# Keywords that only annotate (they never make an instance invalid).
_ANNOTATIONS = frozenset({"$schema", "$id", "$comment", "$defs", "title", "description"})
_TYPES: dict[str, Check] = {
    "object": lambda v: type(v) is dict,
    "array": lambda v: type(v) is list,
    "string": lambda v: type(v) is str,
    # jsonschema also counts 1.0 as an integer: a float is left to it
    "integer": lambda v: type(v) is int,
    "number": lambda v: type(v) is int or (type(v) is float and math.isfinite(v)),
    "boolean": lambda v: type(v) is bool,
    "null": lambda v: v is None,
}
_SCALARS = (str, int, bool, type(None))  # const/enum values: compared by type and value
_NUMBERS = (int, float)  # a bool is not a number to jsonschema; NaN and infinity: ask it


class _Unknown(Exception):
    """The schema uses something this module does not decide: always ask jsonschema."""


def passes(data: Any, schema_file: str) -> bool:
    """True only when jsonschema would find no error in ``data`` against ``schema_file``."""
    check = _compiled(schema_file)
    return check is not None and check(data)


@cache
def _compiled(schema_file: str) -> Check | None:
    schema = schemas.load(schema_file)
    try:
        return _Compiler(schema).node(schema)
    except _Unknown:
        return None


class _Compiler:
    def __init__(self, root: Mapping[str, Any]) -> None:
        self.defs: Mapping[str, Any] = root.get("$defs", {})
        self.refs: dict[str, Check] = {}

    def node(self, schema: Any) -> Check:
        if schema is True:
            return lambda _v: True
        if not isinstance(schema, dict):
            raise _Unknown(schema)
        checks = [self.keyword(k, v, schema) for k, v in schema.items() if k not in _ANNOTATIONS]
        found = [c for c in checks if c is not None]
        if len(found) == 1:
            return found[0]
        return lambda v: all(c(v) for c in found)

    def ref(self, target: Any) -> Check:
        prefix = "#/$defs/"
        if not isinstance(target, str) or not target.startswith(prefix):
            raise _Unknown(target)
        name = target[len(prefix) :]
        if name not in self.defs or "/" in name or "~" in name:
            raise _Unknown(target)
        if name not in self.refs:
            slot: list[Check] = []

            def later(value: Any) -> bool:  # a recursive $ref meets the final check
                return slot[0](value)

            self.refs[name] = later
            slot.append(self.node(self.defs[name]))
            self.refs[name] = slot[0]
        return self.refs[name]

    def keyword(self, key: str, value: Any, schema: Mapping[str, Any]) -> Check | None:
        """One keyword's check (None: nothing to check), as JSON Schema 2020-12 applies it."""
        if key == "$ref":
            return self.ref(value)
        if key == "type":
            kinds = value if isinstance(value, list) else [value]
            if not all(isinstance(k, str) and k in _TYPES for k in kinds):
                raise _Unknown(value)
            tests = [_TYPES[k] for k in kinds]
            if len(tests) == 1:
                return tests[0]
            return lambda v: any(t(v) for t in tests)
        if key in ("const", "enum"):
            return _equal_to([value] if key == "const" else value)
        if key == "anyOf" and isinstance(value, list) and value:
            options = [self.node(s) for s in value]
            return lambda v: any(o(v) for o in options)
        if key in _OBJECT:
            return _only_for(dict, _OBJECT[key](self, value, schema))
        if key in _ARRAY:
            return _only_for(list, _ARRAY[key](self, value))
        if key in _STRING:
            return _only_for(str, _STRING[key](value))
        if key in ("minimum", "maximum") and type(value) in (int, float):
            bound = value
            if key == "minimum":
                return lambda v: type(v) not in _NUMBERS or (math.isfinite(v) and v >= bound)
            return lambda v: type(v) not in _NUMBERS or (math.isfinite(v) and v <= bound)
        raise _Unknown(key)


def _equal_to(options: Any) -> Check:
    if not isinstance(options, list) or not all(type(o) in _SCALARS for o in options):
        raise _Unknown(options)
    pairs = {(type(o), o) for o in options}
    return lambda v: type(v) in _SCALARS and (type(v), v) in pairs


def _only_for(kind: type, check: Check | None) -> Check | None:
    """A keyword of one JSON type ignores every other type (JSON Schema's rule)."""
    if check is None:
        return None
    return lambda v: type(v) is not kind or check(v)


def _required(_c: _Compiler, value: Any, _s: Mapping[str, Any]) -> Check:
    if not isinstance(value, list) or not all(isinstance(k, str) for k in value):
        raise _Unknown(value)
    return lambda v: all(k in v for k in value)


def _properties(c: _Compiler, value: Any, _s: Mapping[str, Any]) -> Check:
    if not isinstance(value, dict):
        raise _Unknown(value)
    subs = {k: c.node(s) for k, s in value.items()}
    return lambda v: all(subs[k](x) for k, x in v.items() if k in subs)


def _additional(c: _Compiler, value: Any, schema: Mapping[str, Any]) -> Check:
    if "patternProperties" in schema:
        raise _Unknown("patternProperties")
    known = frozenset(schema.get("properties", {}))
    if value is False:
        return lambda v: all(k in known for k in v)
    sub = c.node(value)
    return lambda v: all(sub(x) for k, x in v.items() if k not in known)


def _property_names(c: _Compiler, value: Any, _s: Mapping[str, Any]) -> Check:
    sub = c.node(value)
    return lambda v: all(sub(k) for k in v)


def _items(c: _Compiler, value: Any) -> Check:
    sub = c.node(value)
    return lambda v: all(sub(x) for x in v)


def _unique(_c: _Compiler, value: Any) -> Check | None:
    if value is False:
        return None
    if value is not True:
        raise _Unknown(value)
    # only strings are compared here (jsonschema tells 1 from true and 1.0 from 1)
    return lambda v: all(type(x) is str for x in v) and len(set(v)) == len(v)


def _min_items(_c: _Compiler, value: Any) -> Check:
    if type(value) is not int:
        raise _Unknown(value)
    return lambda v: len(v) >= value


def _pattern(value: Any) -> Check:
    if not isinstance(value, str):
        raise _Unknown(value)
    compiled = re.compile(value)  # jsonschema's own test: re.search
    return lambda v: compiled.search(v) is not None


def _min_length(value: Any) -> Check:
    if type(value) is not int:
        raise _Unknown(value)
    return lambda v: len(v) >= value


_OBJECT: dict[str, Callable[[_Compiler, Any, Mapping[str, Any]], Check]] = {
    "required": _required,
    "properties": _properties,
    "additionalProperties": _additional,
    "propertyNames": _property_names,
}
_ARRAY: dict[str, Callable[[_Compiler, Any], Check | None]] = {
    "items": _items,
    "uniqueItems": _unique,
    "minItems": _min_items,
}
_STRING: dict[str, Callable[[Any], Check]] = {"pattern": _pattern, "minLength": _min_length}

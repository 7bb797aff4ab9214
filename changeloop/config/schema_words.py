"""JSON Schema's bounds and alternatives said in the file's terms, each with a fix.

jsonschema says "0 is less than the minimum of 1", "{} should be non-empty" or
"'x' is not valid under any of the given schemas"; the user needs what is
accepted and what to write instead::

    providers.test.timeoutMs must be at least 1, not 0
      fix: give providers.test.timeoutMs a value of at least 1
    requires must be a list or a mapping, not a string
      fix: write it as a list: `requires: [static-analysis]`, or a mapping ...

:func:`bound_or_choice` answers for ``minimum``/``maximum`` (and their exclusive
forms), ``minItems``/``minProperties``/``minLength`` and ``anyOf``/``oneOf``;
``config/schema.py`` asks it before falling back to jsonschema's words.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from changeloop.errors import Location, Problem

if TYPE_CHECKING:
    from jsonschema import ValidationError

TYPE_WORDS = {
    "object": "a mapping",
    "array": "a list",
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "true or false",
    "null": "empty",
}
# Patterns the schemas use for a value (not a name), in words with an example.
_PATTERNS = {
    "^[0-9]+[smhdw]$": ("a duration like 7d (digits, then s, m, h, d or w)", "7d"),
    "^https?://": ("an http:// or https:// URL", "http://127.0.0.1:4173/"),
}
_COMPARE = {
    "minimum": "at least",
    "maximum": "at most",
    "exclusiveMinimum": "more than",
    "exclusiveMaximum": "less than",
}
_AT_LEAST = {
    "minItems": ("item", "items"),
    "minProperties": ("entry", "entries"),
    "minLength": ("character", "characters"),
}


def bound_or_choice(
    error: ValidationError, dotted: str, where: Location | None, type_name: str
) -> Problem | None:
    """A Problem for a bound or an alternative jsonschema refused, or None (not one of them)."""
    keyword, wanted, instance = error.validator, error.validator_value, error.instance
    if keyword in _COMPARE:
        bound = f"{_COMPARE[keyword]} {wanted}"
        return Problem(
            code="out_of_range",
            message=f"{dotted} must be {bound}, not {instance!r}",
            location=where,
            fix=f"give {dotted} a value {'of ' if 'at' in bound else ''}{bound}",
        )
    if keyword in _AT_LEAST and isinstance(wanted, int):
        one, many = _AT_LEAST[keyword]
        amount = f"one {one}" if wanted == 1 else f"{wanted} {many}"
        return Problem(
            code="too_few",
            message=f"{dotted} must have at least {amount}",
            location=where,
            fix=_fill_hint(dotted, keyword),
        )
    if keyword in ("anyOf", "oneOf") and isinstance(wanted, list):
        words, examples = _alternatives(error, wanted)
        if not words:
            return None
        key = dotted.rsplit(".", 1)[-1]
        shown = repr(instance) if isinstance(instance, str | int | float) else type_name
        fix = f"give {dotted} {' or '.join(words)}"
        if isinstance(instance, str) and "a list" in words:
            fix = f"write it as a list: `{key}: [{instance}]`"
            if "a mapping" in words:
                fix += f", or a mapping: `{key}: {{{instance}: [<repository>]}}`"
        elif examples:
            fix += f", e.g. `{key}: {examples[0]}`"
        return Problem(
            code="invalid_value",
            message=f"{dotted} must be {' or '.join(words)}, not "
            + (type_name if "a list" in words or "a mapping" in words else shown),
            location=where,
            fix=fix,
        )
    return None


def _alternatives(error: ValidationError, options: list[Any]) -> tuple[list[str], list[str]]:
    """Each alternative in words (a $ref is read through the errors it produced)."""
    resolved: dict[int, Any] = {}
    for sub in error.context or ():
        index = sub.relative_schema_path[0] if sub.relative_schema_path else None
        if isinstance(index, int) and tuple(sub.absolute_path) == tuple(error.absolute_path):
            resolved.setdefault(index, sub.schema)
    words: list[str] = []
    examples: list[str] = []
    for index, option in enumerate(options):
        schema = resolved.get(index, option)
        if not isinstance(schema, dict) or "$ref" in schema:
            return [], []
        pattern = schema.get("pattern")
        if isinstance(pattern, str) and pattern in _PATTERNS:
            word, example = _PATTERNS[pattern]
            examples.append(example)
        else:
            word = TYPE_WORDS.get(str(schema.get("type")), "")
            if not word:
                return [], []
            if "minimum" in schema:
                word += f" of at least {schema['minimum']}"
        if word not in words:
            words.append(word)
    return words, examples


def _fill_hint(dotted: str, keyword: str) -> str:
    """What to put in an empty list or mapping, with an example where the key is known."""
    key = dotted.rsplit(".", 1)[-1]
    if key == "lanes":
        return 'add a lane, e.g. "lanes": {"lint": {"command": ["npm", "run", "lint"]}}'
    if key == "command":
        return f"give {dotted} the program and its arguments, e.g. [npm, test]"
    if keyword == "minLength":
        return f"give {dotted} a non-empty value, or remove it"
    what = "an entry" if keyword == "minProperties" else "an item"
    return f"add {what} to {dotted}, or remove it"

"""Version checks and JSON Schema errors turned into Problems users can act on.

jsonschema says *what* is wrong in schema terms; this module says it in the
file's terms — which key, at which line and column, and the one-line fix::

    check_version(doc, file="evidence.yaml", reads=3)
    problems = schema_problems(doc, "evidence-v3.json", family="evidence", version=3)
"""

from __future__ import annotations

import difflib
import shlex
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from changeloop import schemas
from changeloop.config import validation_memo
from changeloop.config.schema_words import TYPE_WORDS, bound_or_choice
from changeloop.errors import ConfigError, Problem
from changeloop.marks import Document, YamlPath

if TYPE_CHECKING:  # jsonschema is imported only to validate (a slow import at start-up)
    from jsonschema import ValidationError

# Durations past these are a typo, not a plan (docs/processes.md):
# a command may run up to a week, and a receipt may be accepted up to a century
# old. Beyond them a timer or a date computation would overflow or never fire.
MAX_TIMEOUT_MS = 7 * 24 * 3600 * 1000
MAX_AGE_S = 100 * 365 * 24 * 3600
_AGE_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def type_name(value: Any) -> str:
    if value is None:
        return "empty"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number"
    return "a string"


def check_version(doc: Document, *, file: str, reads: int) -> None:
    """Refuse a missing, malformed, newer or older ``version`` before any schema talk."""
    data = doc.data
    if not isinstance(data, dict):
        raise ConfigError(
            Problem(
                code="not_a_mapping",
                message=f"{file} must be a mapping with at least `version: {reads}`, "
                f"not {type_name(data)}",
                location=doc.location(()),
                fix=f"start the file with `version: {reads}`",
            )
        )
    if "version" not in data:
        raise ConfigError(
            Problem(
                code="version_missing",
                message=f"{file} has no `version` (this changeloop reads: {reads})",
                location=doc.location(()),
                fix=f"add `version: {reads}` as the first line",
            )
        )
    version = data["version"]
    where = doc.location(("version",))
    if not isinstance(version, int) or isinstance(version, bool):
        raise ConfigError(
            Problem(
                code="version_invalid",
                message=f"{file} version must be an integer, not {version!r} (reads: {reads})",
                location=where,
                fix=f"write `version: {reads}`",
            )
        )
    if version > reads:
        raise ConfigError(
            Problem(
                code="version_newer",
                message=f"{file} version {version} is newer than this changeloop reads "
                f"(reads: {reads})",
                location=where,
                fix="upgrade changeloop (pip install -U changeloop)",
            )
        )
    if version < reads:
        raise ConfigError(
            Problem(
                code="version_older",
                message=f"{file} version {version} is older than this changeloop reads "
                f"(reads: {reads})",
                location=where,
                fix=f"rewrite the file for version {reads} (see docs/)",
            )
        )


def level_name(path: YamlPath, family: str, version: int) -> str:
    """Words for where in the file a key sits, e.g. ``provider 'test'``."""
    top = f"{family} version {version}"
    if not path:
        return top
    head = path[0]
    if len(path) >= 2:
        name = path[1]
        rest = path[2:]
        single = {
            "providers": "provider",
            "services": "service",
            "claims": "claim",
            "repositories": "repository",
        }.get(str(head))
        if single:
            base = f"{single} {name!r}"
            if not rest:
                return base
            return f"{'.'.join(str(p) for p in rest)} of {base}"
    return f"'{'.'.join(str(p) for p in path)}'"


def _dotted(path: YamlPath) -> str:
    return ".".join(str(p) for p in path) or "(top level)"


def _argv_example(value: Any) -> str:
    try:
        parts = shlex.split(value) if isinstance(value, str) else []
    except ValueError:
        parts = []
    parts = parts or ["npm", "test"]
    return "[" + ", ".join(f'"{p}"' for p in parts) + "]"


def _rename_fix(extra: list[str], allowed: list[str]) -> str:
    """``rename timeout to timeoutMs`` for a key one edit or two from a defined one."""
    meant = [difflib.get_close_matches(key, allowed, n=1, cutoff=0.6) for key in extra]
    if not all(meant):
        return f"remove or rename {', '.join(extra)}"
    guesses = ", ".join(m[0] for m in meant)
    renames = ", ".join(f"{key} to {m[0]}" for key, m in zip(extra, meant, strict=True))
    them = "it" if len(extra) == 1 else "them"
    return f"did you mean {guesses}? rename {renames}, or remove {them}"


def _one(error: ValidationError, doc: Document, family: str, version: int) -> Problem:
    path: YamlPath = tuple(error.absolute_path)
    instance = error.instance
    keyword = error.validator
    spec: Any = error.schema
    wanted: Any = error.validator_value
    key = path[-1] if path else None
    if keyword in ("anyOf", "oneOf") and error.context:
        from jsonschema.exceptions import best_match  # noqa: PLC0415 - jsonschema is heavy; only a failed check needs best_match

        deeper = best_match(error.context)
        if deeper is not None and tuple(deeper.absolute_path) != path:
            return _one(deeper, doc, family, version)
    if keyword == "additionalProperties" and isinstance(instance, dict):
        allowed = sorted(spec.get("properties", {}))
        extra = sorted(k for k in instance if k not in allowed)
        if allowed and extra:
            level = level_name(path, family, version)
            where = f"{family} version {version}"
            if path:
                where += f" for {level}"
            return Problem(
                code="unknown_key",
                message=f"field(s) {extra!r} are not defined by {where} — it defines "
                f"[{', '.join(allowed)}]",
                location=doc.location((*path, extra[0]), key=True),
                fix=_rename_fix(extra, allowed),
            )
    argv_key = key in ("command", "setup") or (
        isinstance(key, int) and len(path) >= 2 and path[-2] == "setup"
    )
    if argv_key and isinstance(instance, str) and keyword == "type":
        what = f"setup entry {key}" if isinstance(key, int) else str(key)
        return Problem(
            code="command_not_list",
            message=f"{level_name(path[:-1], family, version)}: {what} must be an argv list, "
            f"e.g. {_argv_example(instance)}",
            location=doc.location(path),
            fix=f"write it as a list: {_argv_example(instance)}",
        )
    if keyword == "type":
        kinds = wanted if isinstance(wanted, list) else [wanted]
        words = " or ".join(TYPE_WORDS.get(str(w), str(w)) for w in kinds)
        return Problem(
            code="wrong_type",
            message=f"{_dotted(path)} must be {words}, not {type_name(instance)}",
            location=doc.location(path),
            fix=f"give {_dotted(path)} {words}",
        )
    if keyword == "required":
        missing = [k for k in wanted if isinstance(instance, dict) and k not in instance]
        return Problem(
            code="missing_key",
            message=f"{level_name(path, family, version)} is missing {', '.join(missing)}",
            location=doc.location(path, key=True),
            fix=f"add {', '.join(missing)}",
        )
    if keyword == "minItems" and path[-1:] == ("requires",) and path[:1] == ("claims",):
        return Problem(
            code="claim_requires_nothing",
            message=f"{_dotted(path)} must name at least one capability",
            location=doc.location(path),
            fix="list the capabilities whose receipts must credit the claim, e.g."
            " `requires: [test]`",
        )
    if keyword == "enum":
        options = ", ".join(str(v) for v in wanted)
        return Problem(
            code="invalid_value",
            message=f"{_dotted(path)} must be one of [{options}], not {instance!r}",
            location=doc.location(path),
            fix=f"use one of: {options}",
        )
    if "propertyNames" in error.absolute_schema_path and isinstance(instance, str):
        return Problem(
            code="invalid_name",
            message=f"{instance!r} under {_dotted(path)} is not a valid name (letters, digits, "
            "'.', '_', '-'; starting with a letter or digit)",
            location=doc.location((*path, instance), key=True),
            fix="rename it",
        )
    if keyword == "pattern" and len(path) >= 1 and wanted.startswith("^[A-Za-z0-9]"):
        return Problem(
            code="invalid_name",
            message=f"{instance!r} at {_dotted(path)} is not a valid name (letters, digits, "
            "'.', '_', '-'; starting with a letter or digit)",
            location=doc.location(path),
            fix="rename it",
        )
    if keyword == "propertyNames":
        return Problem(
            code="invalid_name",
            message=f"{instance!r} under {_dotted(path)} is not a valid name",
            location=doc.location(path),
            fix="rename it",
        )
    worded = bound_or_choice(error, _dotted(path), doc.location(path), type_name(instance))
    if worded is not None:
        return worded
    return Problem(
        code="invalid_value",
        message=f"{_dotted(path)}: {error.message}",
        location=doc.location(path),
        fix=f"correct {_dotted(path)} as the message says",
    )


def schema_problems(doc: Document, schema_file: str, *, family: str, version: int) -> list[Problem]:
    """Every schema error as a Problem, one per offending node, sorted by position."""
    key, passed = validation_memo.lookup(doc.data, schema_file)
    if passed:
        errors: Sequence[ValidationError] = []  # these very data passed this very schema
    else:
        errors = list(schemas.validator(schema_file).iter_errors(doc.data))
    if key is not None and not passed and not errors:
        validation_memo.remember(key)
    problems: dict[tuple[str, str | None, int | None, int | None], Problem] = {}
    for problem in bound_problems(doc):
        loc = problem.location
        problems[
            (
                problem.message,
                loc.path if loc else None,
                loc.line if loc else None,
                loc.column if loc else None,
            )
        ] = problem
    for error in errors:
        problem = _one(error, doc, family, version)
        loc = problem.location
        ident = (
            problem.message,
            loc.path if loc else None,
            loc.line if loc else None,
            loc.column if loc else None,
        )
        problems.setdefault(ident, problem)
    return sorted(problems.values(), key=position)


def _age_seconds(value: Any) -> int | None:
    """``maxAge`` in seconds when it has a readable shape (the schema judges the rest)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and value[-1:] in _AGE_UNITS and value[:-1].isdigit():
        digits = value[:-1]
        if len(digits) > 30:
            return MAX_AGE_S + 1
        return int(digits) * _AGE_UNITS[value[-1]]
    return None


def bound_problems(doc: Document) -> list[Problem]:
    """``timeoutMs`` (anywhere, readiness included) and ``maxAge`` beyond their sane bounds."""
    found: list[Problem] = []

    def visit(node: Any, path: YamlPath) -> None:
        if isinstance(node, list):
            for index, item in enumerate(node):
                visit(item, (*path, index))
            return
        if not isinstance(node, dict):
            return
        for key, value in node.items():
            here = (*path, key)
            if key == "timeoutMs" and isinstance(value, int) and not isinstance(value, bool):
                if value > MAX_TIMEOUT_MS:
                    found.append(
                        Problem(
                            code="duration_out_of_range",
                            message=f"{_dotted(here)}: {value} ms is more than a week "
                            f"(at most {MAX_TIMEOUT_MS} ms)",
                            location=doc.location(here),
                            fix=f"give {_dotted(here)} at most {MAX_TIMEOUT_MS} (7 days)",
                        )
                    )
            elif key == "maxAge":
                seconds = _age_seconds(value)
                if seconds is not None and seconds > MAX_AGE_S:
                    found.append(
                        Problem(
                            code="duration_out_of_range",
                            message=f"{_dotted(here)}: {value!r} is more than 100 years "
                            f"(at most {MAX_AGE_S} seconds)",
                            location=doc.location(here),
                            fix=f"give {_dotted(here)} at most {MAX_AGE_S} seconds, e.g. 5200w",
                        )
                    )
            else:
                visit(value, here)

    visit(doc.data, ())
    return found


def position(problem: Problem) -> tuple[str, int, int, str]:
    loc = problem.location
    if loc is None:
        return ("", 0, 0, problem.message)
    return (loc.path, loc.line or 0, loc.column or 0, problem.message)

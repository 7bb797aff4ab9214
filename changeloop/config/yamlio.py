"""Safe YAML that remembers where every key and value came from.

PyYAML's SafeLoader only *composes* the node graph here; our own walk turns
nodes into plain Python values so that we can refuse what a config file should
never contain — duplicate keys, alias bombs, non-standard tags — and keep the
1-based (line, column) of every key and value, addressed by path::

    doc = load_yaml(Path("evidence.yaml"), display="openspec/changes/x/evidence.yaml")
    doc.data["claims"]["greeting"]["requires"]       # plain values
    doc.location(("claims", "greeting", "requires"))  # Location(path, line, column)
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from yaml.constructor import SafeConstructor

from changeloop.config.yaml_core import LOADER, TAG
from changeloop.errors import ConfigError, FileRefused, Location, Problem
from changeloop.fsio import read_regular
from changeloop.marks import Document, YamlPath

# Nodes visited a second time (through an alias) before we call it a bomb.
ALIAS_BUDGET = 10_000
MAX_BYTES = 4 * 1024 * 1024
# Integers must be exact in every JSON reader (I-JSON, RFC 7493) because they end
# up in canonicalized receipts and fingerprints: refused when read (docs/processes.md).
MAX_INTEGER = 2**53 - 1

_TAG = TAG
_SCALAR_TAGS = {f"{_TAG}{t}" for t in ("str", "int", "float", "bool", "null", "timestamp")}
_STR, _SEQ, _MAP, _MERGE = f"{_TAG}str", f"{_TAG}seq", f"{_TAG}map", f"{_TAG}merge"


def _core_int(text: str) -> int:
    """An integer of the core schema (an explicit ``!!int`` may use the same forms)."""
    sign = -1 if text.startswith("-") else 1
    body = text.lstrip("+-").replace("_", "")
    if body.startswith("0o"):
        return sign * int(body[2:], 8)
    if body.startswith("0x"):
        return sign * int(body[2:], 16)
    return sign * int(body, 10)


def _core_float(text: str) -> float:
    lowered = text.lower()
    if lowered.lstrip("+-") == ".inf":
        return float("-inf") if lowered.startswith("-") else float("inf")
    if lowered == ".nan":
        return float("nan")
    return float(text)


def _core_bool(text: str) -> bool:
    return {"true": True, "false": False}[text.lower()]


def _where_it_began(exc: yaml.MarkedYAMLError) -> str:
    """Where the construct that went wrong was opened, when that is another line: an
    unclosed ``[`` is found lines later, and the line to fix is the one that opened it."""
    begun, found = exc.context_mark, exc.problem_mark
    if begun is None or found is None or begun.line == found.line:
        return ""
    kind = next((name for key, name in _CONSTRUCTS.items() if key in (exc.context or "")), None)
    return (
        f" (the {kind or 'construct'} opened at line {begun.line + 1}, column {begun.column + 1})"
    )


_CONSTRUCTS = {
    "flow sequence": "[ list",
    "flow mapping": "{ mapping",
    "block mapping": "mapping",
    "block sequence": "list",
    "quoted scalar": "quoted string",
}


def _syntax_fix(mark: yaml.Mark | None, text: str) -> str:
    """A tab where indentation is read is YAML's most common surprise: say so."""
    if mark is not None and 0 <= mark.index < len(text) and text[mark.index] == "\t":
        return "replace the tab with spaces: YAML indents with spaces only"
    return "fix the YAML syntax at that position"


def _problem(
    code: str,
    message: str,
    display: str,
    *,
    line: int | None = None,
    column: int | None = None,
    fix: str | None = None,
) -> ConfigError:
    return ConfigError(
        Problem(code=code, message=message, location=Location(display, line, column), fix=fix)
    )


def _decode(raw: bytes, display: str) -> str:
    if b"\x00" in raw:
        line = raw[: raw.index(b"\x00")].count(b"\n") + 1
        raise _problem(
            "binary_file",
            f"{display} is a binary file, not a UTF-8 text file (it contains NUL bytes)",
            display,
            line=line,
            fix="write the file as plain UTF-8 YAML text",
        )
    if raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        column = exc.start - (raw.rfind(b"\n", 0, exc.start) + 1) + 1
        raise _problem(
            "not_utf8",
            f"{display} is not a UTF-8 text file "
            f"(byte 0x{raw[exc.start]:02x} at offset {exc.start})",
            display,
            line=line,
            column=column,
            fix="re-save the file as UTF-8",
        ) from exc


class _Walker:
    """Turns a composed node graph into plain values, recording marks."""

    def __init__(self, display: str) -> None:
        self.display = display
        self.values: dict[YamlPath, tuple[int, int]] = {}
        self.keys: dict[YamlPath, tuple[int, int]] = {}
        self.seen: set[int] = set()
        self.revisits = 0
        self.stack: set[int] = set()
        self.alias_use: tuple[int, int] = (1, 1)
        self.constructor = SafeConstructor()

    def _err(self, code: str, message: str, node: yaml.Node, fix: str | None = None) -> ConfigError:
        return _problem(
            code,
            message,
            self.display,
            line=node.start_mark.line + 1,
            column=node.start_mark.column + 1,
            fix=fix,
        )

    def walk(self, node: yaml.Node, path: YamlPath, record: bool = True) -> Any:
        ident = id(node)
        if ident in self.seen:
            record = self._again(node, ident, path, record)
        else:
            self.seen.add(ident)
        if record:
            mark = node.start_mark
            self.values[path] = (mark.line + 1, mark.column + 1)
        if isinstance(node, yaml.ScalarNode):
            if node.tag == _STR:  # the usual scalar, read as PyYAML gives it
                return str(node.value)
            return self._scalar(node, path)
        self.stack.add(ident)
        try:
            if isinstance(node, yaml.SequenceNode):
                if node.tag != _SEQ:
                    raise self._tag(node)
                return [self.walk(item, (*path, i), record) for i, item in enumerate(node.value)]
            if isinstance(node, yaml.MappingNode):
                return self._mapping(node, path, record)
        finally:
            self.stack.discard(ident)
        raise self._tag(node)  # pragma: no cover - PyYAML has only three node kinds

    def _again(self, node: yaml.Node, ident: int, path: YamlPath, record: bool) -> bool:
        """A node met before (an alias): refused when recursive or past the budget."""
        if ident in self.stack:
            raise self._err(
                "recursive_alias",
                "a YAML alias refers to itself (recursive anchor)",
                node,
                fix="replace the alias with the value it stands for",
            )
        if record:  # the outermost alias: blame the place it is used, not its anchor
            self.alias_use = self._nearest(path)
        self.revisits += 1
        if self.revisits > ALIAS_BUDGET:
            line, column = self.alias_use
            raise _problem(
                "alias_bomb",
                f"YAML anchors and aliases expand to more than "
                f"{ALIAS_BUDGET} nodes (an alias bomb?)",
                self.display,
                line=line,
                column=column,
                fix="write the values out instead of nesting aliases",
            )
        return False  # marks point at the anchor, not at every expansion

    def _nearest(self, path: YamlPath) -> tuple[int, int]:
        for end in range(len(path), -1, -1):
            found = self.keys.get(path[:end]) or self.values.get(path[:end])
            if found is not None:
                return found
        return (1, 1)

    def _tag(self, node: yaml.Node) -> ConfigError:
        return self._err(
            "yaml_tag",
            f"the YAML tag {node.tag!r} is not allowed here",
            node,
            fix="remove the tag; only plain YAML values are read",
        )

    def _scalar(self, node: yaml.ScalarNode, path: YamlPath = ()) -> Any:
        if node.tag not in _SCALAR_TAGS:
            raise self._tag(node)
        kind = node.tag[len(_TAG) :]
        if kind in ("str", "timestamp"):  # dates stay text: we never interpret them
            return str(node.value)
        try:
            if kind == "int":
                return self._integer(node, path)
            if kind == "float":
                return _core_float(str(node.value))
            if kind == "bool":
                return _core_bool(str(node.value))
        except (ValueError, KeyError, yaml.YAMLError) as exc:
            raise self._err("yaml_value", f"{node.value!r} is not a valid {kind}", node) from exc
        return None

    def _integer(self, node: yaml.ScalarNode, path: YamlPath) -> int:
        text = str(node.value).replace("_", "").lstrip("+-")
        # never build a huge int just to refuse it
        value = MAX_INTEGER + 1 if len(text) > 4000 else _core_int(str(node.value))
        if abs(value) <= MAX_INTEGER:
            return value
        where = ".".join(str(p) for p in path) or "the document"
        shown = node.value if len(node.value) <= 40 else node.value[:37] + "..."
        raise self._err(
            "integer_out_of_range",
            f"{where}: {shown} is beyond ±2^53-1 "
            f"({MAX_INTEGER}), the largest integer every JSON reader keeps exact",
            node,
            fix="use a smaller number (durations have their own, smaller "
            "bounds: see docs/processes.md)",
        )

    def _mapping(self, node: yaml.MappingNode, path: YamlPath, record: bool) -> dict[str, Any]:
        if node.tag != _MAP:
            raise self._tag(node)
        out: dict[str, Any] = {}
        lines: dict[str, int] = {}
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode):
                raise self._err("yaml_key", "a mapping key must be a plain scalar", key_node)
            tag = key_node.tag
            if tag != _STR:
                if tag == _MERGE:
                    raise self._err(
                        "yaml_merge",
                        "YAML merge keys (<<) are not supported",
                        key_node,
                        fix="write the merged keys out",
                    )
                if tag not in _SCALAR_TAGS:
                    raise self._tag(key_node)
            key = str(key_node.value)
            mark = key_node.start_mark
            line = mark.line + 1
            if key in lines:
                raise self._err(
                    "duplicate_key",
                    f"duplicate key {key!r} (lines {lines[key]} and {line})",
                    key_node,
                    fix=f"keep one {key!r}",
                )
            lines[key] = line
            child = (*path, key)
            if record:
                self.keys[child] = (line, mark.column + 1)
            out[key] = self.walk(value_node, child, record)
        return out


def load_yaml(path: Path, display: str | None = None) -> Document:
    """Read ``path`` safely; every refusal is a ConfigError with file, line and column."""
    shown = display or str(path)
    try:  # a regular file, read without blocking and with a cap (a FIFO never hangs us)
        raw = read_regular(path, limit=MAX_BYTES, what=shown)
    except FileRefused as exc:
        code = (
            "file_too_large"
            if "larger than" in exc.reason
            else "not_a_regular_file"
            if "not a regular file" in exc.reason
            else "unreadable_file"
        )
        raise _problem(
            code,
            f"cannot read {shown}: {exc.reason}",
            shown,
            fix=f"make {shown} a plain, readable YAML file (not a symlink loop, FIFO or directory)",
        ) from exc
    return parse_yaml_bytes(raw, path, shown)


def parse_yaml_bytes(raw: bytes, path: Path, display: str) -> Document:
    """:func:`parse_yaml` of bytes read elsewhere (a file at another git revision)."""
    return parse_yaml(_decode(raw, display), path, display)


def parse_yaml(text: str, path: Path, display: str) -> Document:
    try:
        nodes = list(yaml.compose_all(text, Loader=LOADER))
    except RecursionError as exc:
        raise _problem("yaml_too_deep", "the YAML nests too deeply", display) from exc
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        what = " ".join(p for p in (exc.context, exc.problem) if p) or "invalid YAML"
        raise _problem(
            "yaml_syntax",
            f"YAML syntax error: {what}{_where_it_began(exc)}",
            display,
            line=mark.line + 1 if mark else None,
            column=mark.column + 1 if mark else None,
            fix=_syntax_fix(mark, text),
        ) from exc
    except yaml.YAMLError as exc:
        line = getattr(exc, "position", None)
        message = f"YAML could not be read: {exc}"
        raise _problem(
            "yaml_syntax",
            message,
            display,
            line=text[:line].count("\n") + 1 if isinstance(line, int) else None,
        ) from exc
    if len(nodes) > 1:
        second = nodes[1]
        raise _problem(
            "yaml_multiple_documents",
            "the file holds more than one YAML document",
            display,
            line=second.start_mark.line + 1,
            column=second.start_mark.column + 1,
            fix="remove the extra '---' document",
        )
    if not nodes:
        return Document(path, display, None)
    walker = _Walker(display)
    try:
        data = walker.walk(nodes[0], ())
    except RecursionError as exc:
        raise _problem("yaml_too_deep", "the YAML nests too deeply", display) from exc
    return Document(path, display, data, walker.values, walker.keys)

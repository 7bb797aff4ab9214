"""config.schema_pass: a certain pass is one jsonschema agrees with, and it is the usual answer.

Documents are drawn from the schemas themselves (mostly fitting, sometimes not,
at every node), then judged by both: ``passes`` may only say True where
jsonschema finds no error; without floats (which it leaves to jsonschema on
purpose) the two must agree exactly, so the shortcut is not a check that never fires.
"""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from prove_helpers import git, make_change, make_repo
from repo_paths import REPO_ROOT

from changeloop import schemas
from changeloop.config.schema_pass import passes
from changeloop.config.yamlio import load_yaml

CONFIG_SCHEMAS = ("execution-v1.json", "evidence-v3.json")

JUNK = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.sampled_from([1.0, 0.5, 3.0, math.nan, math.inf, -0.0]),
    st.sampled_from(["", "a", "-x", "a b", "é", "1", "x::y", "https://h/", "12h", "7q"]),
    st.lists(st.sampled_from(["a", "a", 1, True]), max_size=3),
    st.dictionaries(st.sampled_from(["a", "-b", "command"]), st.integers(0, 2), max_size=2),
)


def _instances(node: Any, root: dict[str, Any], depth: int = 0) -> st.SearchStrategy[Any]:
    """Values for ``node``: usually fitting it, one draw in eight anything at all."""
    fitting = _fitting(node, root, depth)
    return st.integers(0, 7).flatmap(lambda n: JUNK if n == 0 or depth > 6 else fitting)


def _fitting(node: Any, root: dict[str, Any], depth: int) -> st.SearchStrategy[Any]:
    if "$ref" in node:
        return _instances(root["$defs"][node["$ref"].rsplit("/", 1)[1]], root, depth)
    if "anyOf" in node:
        return st.one_of([_instances(s, root, depth) for s in node["anyOf"]])
    if "const" in node:
        return st.just(node["const"])
    if "enum" in node:
        return st.sampled_from(node["enum"])
    kinds = node.get("type", "string")
    kinds = kinds if isinstance(kinds, list) else [kinds]
    return st.one_of([_of_type(k, node, root, depth) for k in kinds])


def _of_type(kind: str, node: dict[str, Any], root: dict[str, Any], depth: int) -> Any:
    if kind == "object":
        return _objects(node, root, depth)
    if kind == "array":
        items = _instances(node.get("items", {}), root, depth + 1)
        return st.lists(items, min_size=node.get("minItems", 0), max_size=3)
    if kind == "string":
        if "pattern" in node:
            return st.from_regex(node["pattern"], fullmatch=True).filter(lambda s: len(s) < 12)
        return st.text("ab:/é", min_size=node.get("minLength", 0), max_size=4)
    if kind == "integer":
        return st.integers(node.get("minimum", -2), node.get("maximum", 10))
    if kind == "number":
        low, high = node.get("minimum", -1), node.get("maximum", 10)
        return st.one_of(st.integers(math.ceil(low), math.floor(high)), st.floats(low, high))
    return st.booleans()


def _objects(node: dict[str, Any], root: dict[str, Any], depth: int) -> Any:
    props = node.get("properties", {})
    chosen = {k: _instances(s, root, depth + 1) for k, s in props.items()}
    required = {k: chosen[k] for k in node.get("required", ())}
    optional = {k: v for k, v in chosen.items() if k not in required}
    fixed = st.fixed_dictionaries(required, optional=optional)
    extra_schema = node.get("additionalProperties", True)
    if extra_schema is False or props:
        return fixed
    names = _instances(node.get("propertyNames", {"type": "string"}), root, depth + 1)
    values = _instances(extra_schema if isinstance(extra_schema, dict) else {}, root, depth + 1)
    hashable = names.filter(lambda k: isinstance(k, str))
    return st.dictionaries(hashable, values, max_size=3)


def _has_float(value: Any) -> bool:
    if isinstance(value, float):
        return True
    if isinstance(value, dict):
        return any(_has_float(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_float(v) for v in value)
    return False


def _jsonschema_valid(data: Any, schema_file: str) -> bool:
    return not list(schemas.validator(schema_file).iter_errors(data))


@pytest.mark.parametrize("schema_file", CONFIG_SCHEMAS)
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_a_pass_is_a_pass_jsonschema_gives_too(schema_file: str, data: st.DataObject) -> None:
    schema = schemas.load(schema_file)
    doc = data.draw(_instances(schema, schema))
    valid = _jsonschema_valid(doc, schema_file)
    if passes(doc, schema_file):
        assert valid, doc
    elif not _has_float(doc):
        assert not valid, f"valid, yet left to jsonschema: {doc!r}"


@pytest.mark.parametrize("schema_file", CONFIG_SCHEMAS)
def test_floats_nan_and_odd_uniqueness_are_left_to_jsonschema(schema_file: str) -> None:
    provider = {"adapter": "mutation", "threshold": 0.5, "timeoutMs": 10}
    cases: list[tuple[Any, bool]] = (
        [
            ({"version": 1, "providers": {"p": provider}}, True),
            ({"version": 1.0}, False),  # jsonschema: valid (1.0 is an integer to it)
            ({"version": 1, "providers": {"p": {**provider, "threshold": math.nan}}}, False),
            ({"version": 1, "providers": {"p": {**provider, "threshold": math.inf}}}, False),
            ({"version": 1, "providers": {"p": {**provider, "timeoutMs": 0}}}, False),
            ({"version": 1, "providers": {"p": {"claims": ["a", "a"]}}}, False),
            ({"version": True}, False),  # true is not the integer 1
        ]
        if schema_file == "execution-v1.json"
        else [
            ({"version": 3, "requires": ["a", "b"]}, True),
            ({"version": 3, "requires": {"a": ["b"]}}, True),
            ({"version": 3, "requires": ["a", "a"]}, False),
            ({"version": 3, "claims": {"": {}}}, False),
            ({"version": 3, "claims": {"c": {"ref": 1.5}}}, False),
        ]
    )
    for data, expected in cases:
        assert passes(data, schema_file) is expected, data
        if expected:
            assert _jsonschema_valid(data, schema_file)


def test_a_schema_with_keywords_it_does_not_know_always_asks_jsonschema() -> None:
    # receipt-extension.json uses oneOf, foundation-quality-v1.json minProperties
    assert passes({}, "receipt-extension.json") is False
    assert passes({"version": 1, "lanes": {}}, "foundation-quality-v1.json") is False


def _configs() -> list[Path]:
    found = [
        p
        for name in ("execution.yaml", "evidence.yaml")
        for p in REPO_ROOT.rglob(name)
        if "node_modules" not in p.parts and ".changeloop" not in p.parts
    ]
    return sorted(found)


def test_every_configuration_in_the_repository_is_judged_as_jsonschema_judges_it() -> None:
    configs = _configs()
    assert len(configs) >= 20
    passed = 0
    for path in configs:
        doc = load_yaml(path)
        schema_file = "execution-v1.json" if path.name == "execution.yaml" else "evidence-v3.json"
        valid = _jsonschema_valid(doc.data, schema_file)
        assert passes(doc.data, schema_file) == valid, path
        passed += valid
    assert passed >= len(configs) - 2  # the examples are valid: the shortcut does the work


PROBE = """\
import sys
from changeloop.cli.main import main
code = main(sys.argv[1:])
print("JSONSCHEMA" if "jsonschema" in sys.modules else "NO-JSONSCHEMA", code, file=sys.stderr)
"""


def _prove_fresh(tmp_path: Path, execution: str) -> subprocess.CompletedProcess[str]:
    root = make_repo(tmp_path / "ws", {"a.txt": "a\n", ".gitignore": ".changeloop/\n"})
    make_change(root, "c", "version: 3\nrequires: [ok]\n", execution)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "change")
    argv = [sys.executable, "-c", PROBE, "prove", "c", "--root", str(root)]
    return subprocess.run(argv, capture_output=True, text=True, check=False)


def test_a_fresh_workspace_proves_a_valid_change_without_importing_jsonschema(
    tmp_path: Path,
) -> None:
    execution = 'version: 1\nproviders:\n  ok:\n    command: [sh, -c, "exit 0"]\n'
    proc = _prove_fresh(tmp_path, execution)
    assert proc.stderr.strip().endswith("NO-JSONSCHEMA 0"), proc.stderr[-2000:]


def test_an_invalid_change_is_still_named_by_file_line_and_key(tmp_path: Path) -> None:
    execution = (
        'version: 1\nproviders:\n  ok:\n    command: [sh, -c, "exit 0"]\n    timeoutMs: soon\n'
    )
    proc = _prove_fresh(tmp_path, execution)
    assert proc.stderr.strip().endswith("JSONSCHEMA 2"), proc.stderr[-2000:]
    assert "execution.yaml:5" in proc.stderr and "timeoutMs" in proc.stderr

"""One YAML dialect: read with the YAML 1.2 core schema; what ``init --write`` writes reads back.

``yes``, ``on``, ``off`` are strings to OpenSpec (YAML 1.2); a YAML 1.1 reader
(PyYAML's ``safe_load``) takes them for booleans. changeloop reads them as
OpenSpec does, and writes them quoted so both readers agree.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
import yaml
from bootstrap_helpers import CHANGE, cli, workspace
from hypothesis import given, settings
from hypothesis import strategies as st

from changeloop.config.yaml_core import LOADER
from changeloop.config.yamlio import parse_yaml
from changeloop.detect.init_writer import _yaml, provider_yaml
from changeloop.model import Provider
from changeloop.plan import build_plan
from changeloop.workspace.discovery import find_change

EXECUTION = """\
version: 1
providers:
  static-analysis:
    adapter: command
    command: [make, lint]
    env: {A: yes, B: on, C: off, D: 1_000, E: "true"}
"""


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("yes", "yes"),
        ("No", "No"),
        ("on", "on"),
        ("off", "off"),
        ("1_000", "1_000"),
        ("1:30", "1:30"),
        ("2024-01-01", "2024-01-01"),
        ("true", True),
        ("FALSE", False),
        ("null", None),
        ("0o17", 15),
        ("0x1f", 31),
        ("012", 12),
        ("1e3", 1000.0),
        ("-.inf", float("-inf")),
    ],
)
def test_plain_scalars_follow_the_core_schema(text: str, value: object) -> None:
    doc = parse_yaml(f"k: {text}\n", Path("x.yaml"), "x.yaml")
    assert doc.data == {"k": value}
    assert type(doc.data["k"]) is type(value)


def test_env_values_yes_on_off_are_strings_in_the_plan(tmp_path: Path) -> None:
    root = workspace(
        tmp_path,
        {},
        evidence="version: 3\nrequires: [static-analysis]\n",
        execution=EXECUTION,
    )
    plan = build_plan(root, find_change(root, CHANGE))
    env = dict(plan.providers["static-analysis"].env)
    assert env == {"A": "yes", "B": "on", "C": "off", "D": "1_000", "E": "true"}


def test_init_write_reads_back_the_same_values(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = workspace(
        tmp_path,
        {"pytest.ini": "[pytest]\n"},
        evidence="version: 3\nrequires: [test, static-analysis]\n",
        execution=EXECUTION,
    )
    code, doc, _ = cli(capsys, "evidence", "init", CHANGE, "--write", "--json", "--root", str(root))
    assert code == 0 and doc is not None and doc["added"] == ["test"]
    plan = build_plan(root, find_change(root, CHANGE))
    env = dict(plan.providers["static-analysis"].env)
    assert env == {"A": "yes", "B": "on", "C": "off", "D": "1_000", "E": "true"}


def test_written_strings_mean_the_same_to_a_yaml_1_1_reader() -> None:
    provider = Provider(
        name="t",
        adapter="command",
        capability="t",
        repository="on",
        command=("run", "yes", "1_000", "0o17", "plain"),
        env={"A": "yes", "B": "off", "C": "true", "D": "text"},
    )
    out = io.StringIO()
    _yaml().dump({"t": provider_yaml(provider)}, out)
    text = out.getvalue()
    ours = parse_yaml(text, Path("x.yaml"), "x.yaml").data["t"]
    theirs = yaml.safe_load(text)["t"]
    for read in (ours, theirs):
        assert read["env"] == {"A": "yes", "B": "off", "C": "true", "D": "text"}
        assert read["command"] == ["run", "yes", "1_000", "0o17", "plain"]
        assert read["repository"] == "on"
    assert "plain" in text and "'plain'" not in text  # only what needs quoting is quoted


# -- the composer's resolver, written out for the core schema (issue 15) --------------

_SCALARS = st.one_of(
    st.sampled_from(
        [
            "",
            "~",
            "null",
            "Null",
            "NULL",
            "true",
            "False",
            "TRUE",
            "yes",
            "on",
            "1",
            "-1",
            "+7",
            "0o17",
            "0x1F",
            "0o8",
            "1_000",
            "1.5",
            ".5",
            "-.inf",
            ".NaN",
            ".nan",
            "1e3",
            "1.e-3",
            "<<",
            "<",
            "-",
            ".",
            "2024-01-01",
            "1:30",
            "0",
            "00",
            "+",
            "e3",
        ]
    ),
    st.text(alphabet="0123456789+-._eExXoOabfnlrstuNTF~<: ", max_size=8),
    st.text(max_size=6),
)
_KINDS = st.sampled_from([yaml.ScalarNode, yaml.SequenceNode, yaml.MappingNode])


@settings(max_examples=400, deadline=None)
@given(kind=_KINDS, value=_SCALARS, implicit=st.tuples(st.booleans(), st.booleans()))
def test_the_core_resolver_answers_as_pyyaml_resolves(
    kind: type, value: str, implicit: tuple[bool, bool]
) -> None:
    """``CoreLoader.resolve`` skips what cannot apply; it must name PyYAML's tag for
    every node kind, scalar text and implicit flags."""
    loader = LOADER("")
    try:
        base_resolve: Any = yaml.resolver.BaseResolver.resolve  # PyYAML ships no types
        reference = base_resolve(loader, kind, value, implicit)
        assert loader.resolve(kind, value, implicit) == reference
    finally:
        loader.dispose()


_TREES = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_SCALARS, inner, max_size=3),
    max_leaves=12,
)


def _shape(node: yaml.Node) -> object:
    if isinstance(node, yaml.ScalarNode):
        return (node.tag, node.value, node.start_mark.line, node.start_mark.column)
    if isinstance(node, yaml.SequenceNode):
        return (node.tag, [_shape(item) for item in node.value])
    return (node.tag, [(_shape(k), _shape(v)) for k, v in node.value])


@settings(max_examples=200, deadline=None)
@given(tree=_TREES, flow=st.booleans())
def test_documents_compose_to_the_same_nodes_as_with_pyyamls_resolver(
    tree: object, flow: bool
) -> None:
    """A whole document: the same tags, values and marks as PyYAML's own resolver gives."""

    class Reference(LOADER.__mro__[1]):  # type: ignore[misc,name-defined]
        yaml_implicit_resolvers = LOADER.yaml_implicit_resolvers

    text = yaml.safe_dump(tree, default_flow_style=flow, allow_unicode=True)
    ours = yaml.compose(text, Loader=LOADER)
    theirs = yaml.compose(text, Loader=Reference)
    assert ours is not None and theirs is not None
    assert _shape(ours) == _shape(theirs)

"""Property: any mutation of valid files yields a plan or a typed error, never a traceback."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from config_helpers import VALID_EVIDENCE, VALID_EXECUTION, make_workspace
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from changeloop.errors import ChangeloopError
from changeloop.plan import build_plan
from changeloop.preflight import check

FULL_EXECUTION = (
    VALID_EXECUTION
    + """\
repositories:
  self: {setup: [[npm, ci]]}
"""
)
FULL_EXECUTION = FULL_EXECUTION.replace(
    """    dependsOn: [test]
""",
    """    dependsOn: [test]
    env: {A: b}
    envFrom: [HOME]
    inputs: [src/**]
    claims: [greeting]
  review:
    adapter: external
    ci: {issuer: gh, publicKey: pem}
    maxAge: 12h
  contract:
    adapter: contract-digest
    contract: {self: a.json}
""",
)

TOKENS = [
    "",
    ":",
    "- ",
    "  ",
    "\n",
    "{",
    "}",
    "[",
    "]",
    "&a ",
    "*a",
    "!!str ",
    "!x ",
    "'",
    '"',
    "version: 9",
    "~",
    "null",
    "1e3",
    "0x1F",
    "yes",
    "<<: *a",
    "\t",
    "\x00",
    "\xff",
    "é",
    "---\n",
    "#",
    "..",
    "/abs",
    "http://h:99/",
    "command: npm test",
    "adapter: magic",
]

SETTINGS = settings(
    max_examples=120,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-5, 70000)
    | st.text(max_size=8)
    | st.sampled_from(["test", "self", "../x", "http://127.0.0.1/", "a.xml"]),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(
                [
                    "version",
                    "command",
                    "repository",
                    "url",
                    "x",
                    "requires",
                    "expect",
                    "body",
                    "adapter",
                ]
            ),
            inner,
            max_size=3,
        )
    ),
    max_leaves=6,
)


@st.composite
def text_mutation(draw: st.DrawFn, base: str) -> str:
    text = base
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(text)))
        cut = draw(st.integers(0, 6))
        insert = draw(st.sampled_from(TOKENS) | st.text(max_size=4))
        text = text[:at] + insert + text[at + cut :]
    return text


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(value, dict):
        for k, v in value.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += _paths(v, (*prefix, i))
    return out


@st.composite
def tree_mutation(draw: st.DrawFn, base: str) -> str:
    data = yaml.safe_load(base)
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(_paths(data)))
        new = draw(json_values)
        if not path:
            data = new
            continue
        parent = data
        try:
            for part in path[:-1]:
                parent = parent[part]
            if draw(st.booleans()) and isinstance(parent, dict):
                del parent[path[-1]]
            else:
                parent[path[-1]] = new
        except (KeyError, IndexError, TypeError):
            continue
    return yaml.safe_dump(data, sort_keys=False)


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("prop")
    make_workspace(root, evidence=VALID_EVIDENCE, execution=FULL_EXECUTION)
    return root.resolve()


def _attempt(root: Path, evidence: str, execution: str) -> None:
    change = root / "openspec" / "changes" / "demo"
    (change / "evidence.yaml").write_bytes(evidence.encode("utf-8", "surrogatepass"))
    (change / "execution.yaml").write_bytes(execution.encode("utf-8", "surrogatepass"))
    from changeloop.workspace.discovery import find_change

    try:
        plan = build_plan(root, find_change(root, "demo"))
        problems = check(plan)
    except ChangeloopError as exc:
        assert exc.problems and all(p.code and p.message for p in exc.problems)
        assert exc.exit_code == 2
        return
    assert all(p.code and p.message for p in problems)


def test_the_unmutated_files_are_valid(workspace: Path) -> None:
    _attempt(workspace, VALID_EVIDENCE, FULL_EXECUTION)
    from changeloop.workspace.discovery import find_change

    plan = build_plan(workspace, find_change(workspace, "demo"))
    assert set(plan.providers) == {"test", "lint", "review", "contract"}


@SETTINGS
@given(data=st.data())
def test_mutated_evidence_never_tracebacks(workspace: Path, data: st.DataObject) -> None:
    strategy = text_mutation(VALID_EVIDENCE) | tree_mutation(VALID_EVIDENCE)
    _attempt(workspace, data.draw(strategy), FULL_EXECUTION)


@SETTINGS
@given(data=st.data())
def test_mutated_execution_never_tracebacks(workspace: Path, data: st.DataObject) -> None:
    strategy = text_mutation(FULL_EXECUTION) | tree_mutation(FULL_EXECUTION)
    _attempt(workspace, VALID_EVIDENCE, data.draw(strategy))

"""One YAML dialect: read with the YAML 1.2 core schema; what ``init --write`` writes reads back.

``yes``, ``on``, ``off`` are strings to OpenSpec (YAML 1.2); a YAML 1.1 reader
(PyYAML's ``safe_load``) takes them for booleans. changeloop reads them as
OpenSpec does, and writes them quoted so both readers agree.
"""

from __future__ import annotations

import io
from pathlib import Path

import pytest
import yaml
from bootstrap_helpers import CHANGE, cli, workspace

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

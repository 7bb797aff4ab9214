"""model.evolve: the plan's copies are exactly what dataclasses.replace builds."""

from __future__ import annotations

import dataclasses
import inspect
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from config_helpers import VALID_EVIDENCE, VALID_EXECUTION, make_workspace

from changeloop import model
from changeloop.model import Provider, evolve
from changeloop.plan import build_plan

RECORDS = [c for _, c in inspect.getmembers(model, inspect.isclass) if dataclasses.is_dataclass(c)]


def test_every_record_of_the_model_is_one_evolve_copies_itself() -> None:
    assert len(RECORDS) >= 10
    for kind in RECORDS:
        assert model._plain_fields(kind) is not None, kind


def test_a_copy_equals_replace_and_leaves_the_original_alone() -> None:
    env = {"A": "b"}
    original = Provider(name="p", adapter="command", capability="c", env=env)
    for changes in (
        {},
        {"repository": "self"},
        {"resources": ("workspace-read:self",), "capability": "test"},
        {"env": {"X": "y"}, "location": None},
    ):
        copied = evolve(original, **changes)
        assert copied == dataclasses.replace(original, **changes)
        assert copied is not original and copied.__dict__ is not original.__dict__
        assert original.repository is None and original.env is env and original.capability == "c"
    with pytest.raises(dataclasses.FrozenInstanceError):
        evolve(original, repository="x").repository = "y"  # type: ignore[misc]


def test_a_name_that_is_no_field_is_refused_as_replace_refuses_it() -> None:
    original = Provider(name="p", adapter="command", capability="c")
    with pytest.raises(TypeError):
        evolve(original, nonsense=1)


@dataclass(frozen=True)
class _Checked:
    value: int
    doubled: int = field(init=False, default=0)

    def __post_init__(self) -> None:
        object.__setattr__(self, "doubled", self.value * 2)


def test_a_record_with_post_init_is_rebuilt_by_replace() -> None:
    assert model._plain_fields(_Checked) is None
    assert evolve(_Checked(1), value=4).doubled == 8


def test_a_plan_built_with_copies_equals_one_built_with_replace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    change = make_workspace(tmp_path, evidence=VALID_EVIDENCE, execution=VALID_EXECUTION)
    fast = build_plan(tmp_path, change)

    def replace(record: Any, **changes: Any) -> Any:
        return dataclasses.replace(record, **changes)

    monkeypatch.setattr("changeloop.plan.evolve", replace)
    assert build_plan(tmp_path, change) == fast
    assert {p.resources for p in fast.providers.values()} != {()}

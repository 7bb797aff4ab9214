"""jsontext.indented is json.dumps(indent=2, ensure_ascii=False), character for character."""

from __future__ import annotations

import enum
import json
import time
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from changeloop.jsontext import indented
from changeloop.run.runlog import RunLog

SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(),  # NaN and infinities included: json's words for them
    st.text(st.characters(codec=None, exclude_categories=())),  # controls, surrogates
)
KEYS = st.one_of(st.text(max_size=5), st.integers(-3, 3), st.none(), st.booleans())
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.lists(inner, max_size=3).map(tuple),
        st.dictionaries(st.text(max_size=6), inner, max_size=4),
        st.dictionaries(KEYS, inner, max_size=3),  # a key json turns into text
    ),
    max_leaves=30,
)


@settings(max_examples=600, deadline=None)
@given(VALUES)
def test_the_same_text_as_json_dumps(value: Any) -> None:
    assert indented(value) == json.dumps(value, indent=2, ensure_ascii=False)


class _Color(enum.IntEnum):
    RED = 1


def test_what_json_encodes_its_own_way_is_left_to_it() -> None:
    for value in ({"a": _Color.RED}, {1: [True, None]}, [float("nan")], {"x": ()}):
        assert indented(value) == json.dumps(value, indent=2, ensure_ascii=False)
    with pytest.raises(TypeError):
        indented({"a": {1, 2}})  # json refuses a set: so does this
    looped: list[Any] = []
    looped.append(looped)
    with pytest.raises(ValueError, match="Circular"):
        indented(looped)


def test_a_thousand_provider_run_json_is_what_it_always_was(tmp_path: Any) -> None:
    names = [(f"p{i}", "command", "self", ("p0",) if i else ()) for i in range(1000)]
    log = RunLog(run_id="r", change="c", slots=2, sandbox="none", providers=names)
    now = time.time()
    for i, record in enumerate(log.providers.values()):
        record.slot, record.start, record.end = i % 2, now + i / 1000, now + i / 999
    log.settle(
        {f"p{i}": ("ran", i, "é\x1b" if i % 7 else None, [f"r/p{i}.json"]) for i in range(999)}
    )
    written = log.write(tmp_path).read_text(encoding="utf-8")
    assert written == json.dumps(log.to_json(), indent=2, ensure_ascii=False) + "\n"

"""The C-encoder fast path of canonicalize produces exactly the careful RFC 8785 bytes."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from changeloop.signing import jcs


def careful(obj: Any) -> bytes:
    parts: list[str] = []
    jcs._emit(obj, parts)
    return "".join(parts).encode("utf-8")


scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**53) + 1, max_value=2**53 - 1)
    | st.text(alphabet=st.characters(codec="utf-8"), max_size=12)
)
values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(
            st.text(alphabet=st.characters(codec="utf-8"), max_size=6), inner, max_size=4
        )
    ),
    max_leaves=20,
)


@settings(max_examples=400, deadline=None)
@given(values)
def test_fast_path_equals_the_careful_path(obj: Any) -> None:
    assert jcs.canonicalize(obj) == careful(obj)


def test_fast_path_is_taken_for_plain_data_and_not_for_floats_or_astral_keys() -> None:
    assert jcs._fast({"b": [1, "é", None], "a": True}) == b'{"a":true,"b":[1,"\xc3\xa9",null]}'
    assert jcs._fast({"x": 1.5}) is None
    assert jcs._fast({"\U0001f600": 1, "\ufb01": 2}) is None  # UTF-16 order differs here
    assert jcs.canonicalize({"\U0001f600": 1, "\ufb01": 2}) == careful(
        {"\U0001f600": 1, "\ufb01": 2}
    )


class Count(int):
    """An int subclass: its JSON text is its own business, so never the fast path."""


@pytest.mark.parametrize(
    "deep",
    [
        1.5,
        2**53,
        -(2**53),
        Count(3),
        {1: "non-string key"},
        {None: "null key"},
        b"bytes",
        {"set"},
    ],
    ids=repr,
)
def test_the_walk_refuses_what_the_c_encoder_would_spell_differently_at_any_depth(
    deep: Any,
) -> None:
    # Nested under a list inside a dict inside a tuple: the walk judges members
    # where it meets them, so depth must not hide one.
    doc = {"a": [1, "x", ({"b": [None, deep]},)], "z": True}
    assert jcs._fast(doc) is None
    assert jcs._fast(deep) is None  # and at the top
    if isinstance(deep, int) and not isinstance(deep, Count):
        with pytest.raises(jcs.CanonicalizationError):
            jcs.canonicalize(doc)


def test_the_walk_takes_the_boundary_integers_and_every_container_kind() -> None:
    doc = {"max": 2**53 - 1, "min": -(2**53) + 1, "t": (1, [2, {"k": ()}]), "e": {}}
    assert jcs._fast(doc) == careful(doc)
    assert jcs._fast("top") == b'"top"' and jcs._fast(None) == b"null"

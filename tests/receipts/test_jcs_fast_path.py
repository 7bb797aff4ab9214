"""The C-encoder fast path of canonicalize produces exactly the careful RFC 8785 bytes."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from changeloop import jcs


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

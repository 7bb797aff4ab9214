"""RFC 8785 canonical JSON: the bytes a receipt id hashes, the ``rfc8785`` package's bytes."""

from __future__ import annotations

import json
import math
import sys
from typing import Any

import pytest
import rfc8785
from hypothesis import given, settings
from hypothesis import strategies as st

from changeloop.signing.jcs import CanonicalizationError, canonicalize, format_number

RFC_INPUT = r"""{
  "numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],
  "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
  "literals": [null, true, false]
}"""
RFC_OUTPUT = (
    '{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],'
    '"string":"€$\\u000f\\nA\'B\\"\\\\\\\\\\"/"}'
)


def test_rfc8785_section_3_2_3_example() -> None:
    assert canonicalize(json.loads(RFC_INPUT)) == RFC_OUTPUT.encode("utf-8")


def test_keys_sort_by_utf16_code_units_not_code_points() -> None:
    # RFC 8785 §3.2.3 sorting example: U+1F600 (surrogates D83D…) sorts before U+FB33.
    obj = {
        "\u20ac": "Euro",
        "\r": "CR",
        "\ufb33": "Hebrew",
        "1": "One",
        "\U0001f600": "Smiley",
        "\u0080": "Control",
        "\u00f6": "o-umlaut",
    }
    keys = list(json.loads(canonicalize(obj)).keys())
    assert keys == ["\r", "1", "\u0080", "\u00f6", "\u20ac", "\U0001f600", "\ufb33"]


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (0.0, "0"),
        (-0.0, "0"),
        (1.0, "1"),
        (-1.5, "-1.5"),
        (1e21, "1e+21"),
        (1e20, "100000000000000000000"),
        (1e-6, "0.000001"),
        (1e-7, "1e-7"),
        (5e-324, "5e-324"),
        (1.7976931348623157e308, "1.7976931348623157e+308"),
        (123456789.123, "123456789.123"),
        (0.1 + 0.2, "0.30000000000000004"),
    ],
)
def test_numbers_use_ecmascript_form(value: float, text: str) -> None:
    assert format_number(value) == text


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_nan_and_infinity_are_refused(bad: float) -> None:
    with pytest.raises(CanonicalizationError):
        canonicalize({"x": bad})


def test_integers_print_exactly_and_unsafe_ones_are_refused() -> None:
    assert canonicalize([0, -7, 2**53 - 1]) == b"[0,-7,9007199254740991]"
    with pytest.raises(CanonicalizationError, match="2\\*\\*53"):
        canonicalize(2**53)


def test_strings_escape_only_what_rfc8785_escapes() -> None:
    assert canonicalize("\x1f\x7f/é\t") == '"\\u001f\x7f/é\\t"'.encode()


def test_lone_surrogates_and_non_string_keys_are_refused() -> None:
    with pytest.raises(CanonicalizationError, match="surrogate"):
        canonicalize("\ud800")
    with pytest.raises(CanonicalizationError, match="not a string"):
        canonicalize({1: "x"})
    with pytest.raises(CanonicalizationError, match="no JSON form"):
        canonicalize({"x": b"bytes"})


def test_whitespace_and_order_independent() -> None:
    a = json.loads('{ "b" : [1, {"d": 1, "c": 2}], "a": "x" }')
    b = {"a": "x", "b": [1, {"c": 2, "d": 1}]}
    assert canonicalize(a) == canonicalize(b) == b'{"a":"x","b":[1,{"c":2,"d":1}]}'


# Any Unicode but lone surrogates (no UTF-8 form), any double RFC 8785 can spell.
_TEXT = st.text(alphabet=st.characters(codec="utf-8"), max_size=12)
_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**53) + 1, max_value=2**53 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | _TEXT
)
_DOCUMENTS = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(_TEXT, inner, max_size=5),
    max_leaves=30,
)


@settings(max_examples=500, deadline=None)
@given(_DOCUMENTS)
def test_the_bytes_are_the_rfc8785_packages_bytes(doc: Any) -> None:
    assert canonicalize(doc) == rfc8785.dumps(doc)


@pytest.mark.parametrize(
    "value",
    [
        333333333.33333329,
        1e30,
        4.50,
        2e-3,
        1e-27,
        5e-324,
        -5e-324,
        1e21,
        1e-7,
        1e-6,
        9007199254740991.0,
        sys.float_info.max,
        sys.float_info.min,
        0.1 + 0.2,
        -0.0,
    ],
    ids=repr,
)
def test_edge_numbers_are_spelled_as_the_rfc8785_package_spells_them(value: float) -> None:
    assert canonicalize([value]) == rfc8785.dumps([value])


@pytest.mark.parametrize(
    "bad", [math.nan, math.inf, -math.inf, 2**53, -(2**53), {1: "x"}, b"bytes"], ids=repr
)
def test_what_the_rfc8785_package_refuses_is_refused(bad: Any) -> None:
    with pytest.raises(rfc8785.CanonicalizationError):
        rfc8785.dumps(bad)
    with pytest.raises(CanonicalizationError):
        canonicalize(bad)

"""RFC 8785 JSON Canonicalization Scheme (JCS): the bytes a receipt id hashes.

Usage::

    canonicalize({"b": 1, "a": [True, None, "é"]})  # b'{"a":[true,null,"\xc3\xa9"],"b":1}'

The receipt id is sha256 of these bytes, so they must be exactly what any other
RFC 8785 implementation produces (tests/receipts/test_jcs.py holds them to the
``rfc8785`` package's). The rules:

- object members sorted by their keys' UTF-16 code units (not code points);
- strings as UTF-8 with only ``"``, ``\\`` and control characters escaped
  (``\\b \\t \\n \\f \\r``, others ``\\u00xx`` lowercase); lone surrogates refused;
- numbers in ECMAScript ``Number.prototype.toString`` form: integers print as
  integers; non-integral floats use the shortest round-trip digits (Python's
  ``repr`` gives the same digits as ES), laid out by the ES rules;
  NaN and ±Infinity are refused; integers beyond ±2**53 are refused because a
  JavaScript verifier could not represent them exactly.

Where the C encoder provably gives these bytes (no float, no unsafe integer, no
character at or above U+D800), it writes them (``_fast``); a property test holds
it to the careful code (tests/receipts/test_jcs_fast_path.py).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

MAX_SAFE_INTEGER = 2**53 - 1


class CanonicalizationError(ValueError):
    """The value has no RFC 8785 form (NaN, Infinity, a non-string key, …)."""


def canonicalize(obj: Any) -> bytes:
    """The RFC 8785 bytes of ``obj`` (dict/list/tuple/str/int/float/bool/None)."""
    fast = _fast(obj)  # holds "one input changed <= 300 ms" and "1,000 providers <= 4x make"
    if fast is not None:
        return fast
    parts: list[str] = []
    _emit(obj, parts)
    text = "".join(parts)
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as exc:  # a lone surrogate in some string
        raise CanonicalizationError(f"string holds a lone surrogate: {exc}") from exc


_HIGH = re.compile("[\ud800-\U0010ffff]")
# What json.dumps(ensure_ascii=False, sort_keys=True, separators=(",", ":")) builds per
# call, built once. No circular check: _plain has walked the value (a cycle never ends
# that walk, as it never ends RFC 8785).
_ENCODER = json.JSONEncoder(
    ensure_ascii=False, sort_keys=True, separators=(",", ":"), check_circular=False
)
_LEAVES = frozenset({str, bool, type(None)})


def _fast(obj: Any) -> bytes | None:
    """The same bytes through the C encoder, for the common case where they agree.

    ``json.dumps(sort_keys, ensure_ascii=False)`` is RFC 8785 exactly when there
    are no floats (ES number formatting differs), no integer beyond ±2**53-1,
    only plain dicts/lists/tuples, and no character at or above U+D800 anywhere
    (so key order by code point equals order by UTF-16 code unit, and no lone
    surrogate needs escaping). Anything else takes the careful path; a property
    test holds the two to the same bytes.
    """
    if not _plain(obj):
        return None
    text = _ENCODER.encode(obj)
    if not text.isascii() and _HIGH.search(text):  # both in C; max(text) was a third of it
        return None
    return text.encode("utf-8")


def _plain(obj: Any) -> bool:
    """Only exact dicts (string keys), lists, tuples, strings, bools, None and safe integers.

    Walks containers only: each member is judged where it is met, and only a
    container is pushed for later (a receipt is mostly strings; pushing and
    popping each one cost more than the C encoder's whole pass).
    """
    stack = [obj]
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind is dict:
            for key in item:
                if type(key) is not str:
                    return False
            members = item.values()
        elif kind is list or kind is tuple:
            members = item
        else:
            members = (item,)  # the top-level value itself
        for member in members:
            kind = type(member)
            if kind in _LEAVES:
                continue
            if kind is int:
                if not -MAX_SAFE_INTEGER <= member <= MAX_SAFE_INTEGER:
                    return False
            elif kind is dict or kind is list or kind is tuple:
                stack.append(member)
            else:
                return False
    return True


def _emit(obj: Any, out: list[str]) -> None:
    if obj is None:
        out.append("null")
    elif obj is True:
        out.append("true")
    elif obj is False:
        out.append("false")
    elif isinstance(obj, int):
        if abs(obj) > MAX_SAFE_INTEGER:
            raise CanonicalizationError(f"integer {obj} is beyond ±2**53-1 (not exact in I-JSON)")
        out.append(str(obj))
    elif isinstance(obj, float):
        out.append(format_number(obj))
    elif isinstance(obj, str):
        out.append(_string(obj))
    elif isinstance(obj, Mapping):
        for key in obj:
            if not isinstance(key, str):
                raise CanonicalizationError(f"object key {key!r} is not a string")
        out.append("{")
        for i, key in enumerate(sorted(obj, key=_utf16_key)):
            if i:
                out.append(",")
            out.append(_string(key))
            out.append(":")
            _emit(obj[key], out)
        out.append("}")
    elif isinstance(obj, Sequence) and not isinstance(obj, bytes | bytearray):
        out.append("[")
        for i, item in enumerate(obj):
            if i:
                out.append(",")
            _emit(item, out)
        out.append("]")
    else:
        raise CanonicalizationError(f"{type(obj).__name__} has no JSON form")


def _utf16_key(key: str) -> bytes:
    # Big-endian UTF-16 bytes compare in code-unit order; surrogatepass keeps lone
    # surrogates sortable so the later UTF-8 encode reports them properly.
    return key.encode("utf-16-be", "surrogatepass")


def _string(value: str) -> str:
    # json.dumps with ensure_ascii=False escapes exactly RFC 8785's set, lowercase hex.
    return json.dumps(value, ensure_ascii=False)


def format_number(value: float) -> str:
    """ECMAScript Number::toString for a finite double (RFC 8785 §3.2.2.3)."""
    if math.isnan(value) or math.isinf(value):
        raise CanonicalizationError(f"{value} is not allowed in JSON (RFC 8785 refuses it)")
    if value == 0:
        return "0"  # also -0
    sign = "-" if value < 0 else ""
    from decimal import Decimal  # noqa: PLC0415 - most documents hold no float: kept off their imports

    # repr is the shortest string that round-trips, the same digits ES chooses.
    dec = Decimal(repr(abs(value)))
    tup = dec.as_tuple()
    digits = "".join(str(d) for d in tup.digits).rstrip("0") or "0"
    exponent = int(tup.exponent)  # value = int(all digits) * 10**exponent
    stripped = len(tup.digits) - len(digits)
    k = len(digits)
    n = exponent + stripped + k  # value = 0.digits * 10**n
    if k <= n <= 21:
        body = digits + "0" * (n - k)
    elif 0 < n <= 21:
        body = digits[:n] + "." + digits[n:]
    elif -6 < n <= 0:
        body = "0." + "0" * (-n) + digits
    else:
        e = n - 1
        mantissa = digits if k == 1 else digits[0] + "." + digits[1:]
        body = f"{mantissa}e{'+' if e >= 0 else '-'}{abs(e)}"
    return sign + body

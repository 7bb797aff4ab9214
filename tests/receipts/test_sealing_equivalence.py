"""The quicker sealing paths write exactly the bytes of the straightforward ones (issue 15).

Each shortcut taken to seal a receipt with less Python is held here to the
plain computation it replaced, over varied inputs: a receipt is signed, so one
byte of difference would be a different receipt.
"""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from changeloop.caching import local as cache
from changeloop.signing.statement import rfc3339


def rfc3339_by_strftime(moment: datetime) -> str:
    utc = moment.astimezone(UTC)
    return utc.strftime("%Y-%m-%dT%H:%M:%S.") + f"{utc.microsecond // 1000:03d}Z"


@settings(max_examples=300, deadline=None)
@given(
    st.datetimes(min_value=datetime(1001, 1, 2), max_value=datetime(9998, 12, 30)),
    st.integers(min_value=-14 * 60, max_value=14 * 60),
)
def test_rfc3339_spells_what_strftime_spelled(naive: datetime, offset_min: int) -> None:
    moment = naive.replace(tzinfo=timezone(timedelta(minutes=offset_min)))
    assert rfc3339(moment) == rfc3339_by_strftime(moment)


def test_rfc3339_pads_every_field_and_truncates_to_milliseconds() -> None:
    moment = datetime(2026, 1, 2, 3, 4, 5, 678999, tzinfo=UTC)
    assert rfc3339(moment) == "2026-01-02T03:04:05.678Z"
    # RFC 3339 wants four year digits; glibc's %Y gave "999".
    assert rfc3339(datetime(999, 1, 1, tzinfo=UTC)) == "0999-01-01T00:00:00.000Z"


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.binary(max_size=300), min_size=1, max_size=4),
    st.text(alphabet="0123456789abcdef", min_size=64, max_size=64),
)
def test_a_cache_entry_is_the_json_dumps_it_spells_out(envelopes: list[bytes], hexes: str) -> None:
    fingerprint = "sha256:" + hexes
    target, data = cache.entry_of_passes(Path("/c"), fingerprint, envelopes)
    doc = {
        "fingerprint": fingerprint,
        "envelopes": [base64.b64encode(e).decode() for e in envelopes],
    }
    assert data == json.dumps(doc, sort_keys=True).encode("utf-8")
    assert target == Path("/c") / f"{hexes}.json"


def test_a_cache_entry_round_trips_through_the_reader(tmp_path: Path) -> None:
    fingerprint = "sha256:" + "ab" * 32
    target, data = cache.entry_of_passes(tmp_path, fingerprint, [b"one", b'{"two":"\\n"}'])
    target.write_bytes(data)
    assert cache.load_unchecked(tmp_path, fingerprint) == [b"one", b'{"two":"\\n"}']


@pytest.mark.parametrize("bad", ["sha256:" + "a" * 64 + "\n", 'sha256:"' + "a" * 63, "a" * 64])
def test_a_fingerprint_that_json_would_have_escaped_is_refused(bad: str) -> None:
    with pytest.raises(ValueError, match="not a sha256 fingerprint"):
        cache.entry_of_passes(Path("/c"), bad, [b"x"])

"""The quicker sealing paths write exactly the bytes of the straightforward ones (issue 15).

Each shortcut taken to seal a receipt with less Python is held here to the
plain computation it replaced, over varied inputs: a receipt is signed, so one
byte of difference would be a different receipt.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

from hypothesis import given, settings
from hypothesis import strategies as st

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

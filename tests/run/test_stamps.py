"""``stamps.utc_stamp``: the RFC 3339 UTC time stamps of receipts, run.json and records."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from changeloop.run import runlog
from changeloop.stamps import utc_stamp


def test_a_stamp_pads_every_field_and_cuts_to_milliseconds() -> None:
    moment = datetime(2026, 1, 2, 3, 4, 5, 678999, tzinfo=UTC)
    assert utc_stamp(moment) == "2026-01-02T03:04:05.678Z"
    assert utc_stamp(moment, timespec="seconds") == "2026-01-02T03:04:05Z"
    assert utc_stamp(datetime(999, 1, 1, tzinfo=UTC)) == "0999-01-01T00:00:00.000Z"


def test_a_stamp_is_in_utc_whatever_the_moments_zone() -> None:
    east = timezone(timedelta(hours=5, minutes=30))
    assert utc_stamp(datetime(2026, 1, 1, 2, 0, tzinfo=east)) == "2025-12-31T20:30:00.000Z"


def test_a_naive_moment_is_refused() -> None:
    with pytest.raises(ValueError, match="timezone-aware"):
        utc_stamp(datetime(2026, 1, 1))


def test_run_json_stamps_seconds_since_the_epoch() -> None:
    assert runlog.stamp(None) is None
    assert runlog.stamp(1_700_000_000.1239) == "2023-11-14T22:13:20.123Z"
    assert runlog.stamp(1_700_000_000) == "2023-11-14T22:13:20.000Z"
    with pytest.raises((ValueError, OverflowError, OSError)):
        runlog.stamp(1e300)

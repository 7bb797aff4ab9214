"""RFC 3339 time stamps in UTC, as every file changeloop writes spells them.

    utc_stamp(datetime.now(UTC))                        # '2026-01-02T03:04:05.678Z'
    utc_stamp(datetime.now(UTC), timespec="seconds")    # '2026-01-02T03:04:05Z'

``datetime.isoformat`` does the work: the fraction is cut to ``timespec``, not
rounded, and a year before 1000 keeps its four digits.
"""

from __future__ import annotations

from datetime import UTC, datetime

__all__ = ["utc_stamp"]


def utc_stamp(moment: datetime, *, timespec: str = "milliseconds") -> str:
    """``moment`` in UTC with a ``Z``; a naive ``moment`` is a ``ValueError`` (whose zone?)."""
    if moment.tzinfo is None:
        raise ValueError("time stamps need a timezone-aware datetime")
    return moment.astimezone(UTC).isoformat(timespec=timespec).replace("+00:00", "Z")

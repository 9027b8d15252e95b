"""The one timestamp format of the API and the payloads."""

from __future__ import annotations

from datetime import UTC, datetime
from functools import lru_cache


# Remembered: a batch's 500 answers share one creation time (and mostly one due
# time), and an instant always has one text (equal instants hash alike, whatever
# their zone), so most of a batch's timestamps are a lookup, not a format.
@lru_cache(maxsize=1024)
def format_timestamp(value: datetime) -> str:
    """UTC, millisecond precision, with a ``Z``: ``2026-11-21T10:15:30.123Z``."""
    return value.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def in_milliseconds(value: datetime) -> datetime:
    """``value`` in UTC, cut to whole milliseconds: the instant as the stores keep it."""
    utc = value.astimezone(UTC)
    return utc.replace(microsecond=utc.microsecond // 1000 * 1000)

"""Wall-clock times in a zone, and the written rule for daylight saving (API.md).

One rule for every feature that names a local time (recurring schedules,
local-time sends, quiet hours): a time that does not exist that day (clocks
go forward) is shifted by the gap, 02:30 becoming 03:30, and said to be
shifted; a time that exists twice (clocks go back) is the first of the two.
It is PEP 495's ``fold=0``, which reads a missing time with the offset from
before the change and an ambiguous one as the earlier instant.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta
from zoneinfo import ZoneInfo


def to_utc(local: datetime, zone: ZoneInfo) -> tuple[datetime, bool]:
    """The instant of the naive wall-clock time ``local`` in ``zone``, and whether the
    time did not exist that day and was shifted by the gap."""
    instant = local.replace(tzinfo=zone, fold=0).astimezone(UTC)
    shifted = instant.astimezone(zone).replace(tzinfo=None) != local
    return instant, shifted


def local_date(instant: datetime, zone: ZoneInfo) -> date:
    """The calendar date in ``zone`` at ``instant``."""
    return instant.astimezone(zone).date()


def next_local_time(at: time, on: date | None, zone: ZoneInfo, now: datetime) -> datetime:
    """When a local-time send for ``at`` (on ``on``, if given) is due in ``zone``.

    Without a date: the next time the clocks there show ``at`` after ``now``.
    With one: that date at ``at``, or ``now`` when it has already passed there.
    """
    if on is not None:
        instant, _ = to_utc(datetime.combine(on, at), zone)
        return max(instant, now)
    today = local_date(now, zone)
    for day in (today, today + timedelta(days=1), today + timedelta(days=2)):
        instant, _ = to_utc(datetime.combine(day, at), zone)
        if instant > now:
            return instant
    raise AssertionError("a wall-clock time recurs within two days")  # pragma: no cover

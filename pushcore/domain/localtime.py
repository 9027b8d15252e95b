"""Wall-clock times in a zone, and the written rule for daylight saving (API.md).

One rule for every feature that names a local time (recurring schedules,
local-time sends, quiet hours): a time that does not exist that day (clocks
go forward) is shifted by the gap, 02:30 becoming 03:30, and said to be
shifted; a time that exists twice (clocks go back) is the first of the two.
It is PEP 495's ``fold=0``, which reads a missing time with the offset from
before the change and an ambiguous one as the earlier instant.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Iterable, Mapping
from datetime import UTC, date, datetime, time, timedelta
from zoneinfo import ZoneInfo

import attrs

from pushcore.domain import validation as v
from pushcore.domain.errors import FieldError
from pushcore.domain.timefmt import in_milliseconds

# The zone of a person who has not named one.
DEFAULT_ZONE = "UTC"


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


# A send's due time is at most this far ahead (API.md: "more than 30 days ahead is a 400").
LOCAL_AHEAD_MAX = timedelta(days=30)
# The latest clocks on Earth (UTC-12): a local time read there is the last instant at
# which any zone shows it, so a date within the limit there is within it everywhere.
_LATEST_OFFSET = timedelta(hours=12)
CLOCK_TIME_PATTERN = "^([01][0-9]|2[0-3]):[0-5][0-9]$"
DATE_PATTERN = "^[0-9]{4}-[0-9]{2}-[0-9]{2}$"
_CLOCK_TIME = re.compile(CLOCK_TIME_PATTERN)
_DATE = re.compile(DATE_PATTERN)


def _clock_time(value: str) -> None:
    if not _CLOCK_TIME.fullmatch(value):
        raise ValueError("must be a time of day as HH:MM (00:00 to 23:59)")


def _calendar_date(value: str) -> None:
    try:
        ok = bool(_DATE.fullmatch(value)) and date.fromisoformat(value) is not None
    except ValueError:
        ok = False
    if not ok:
        raise ValueError("must be a date as YYYY-MM-DD")


@attrs.frozen
class LocalTime:
    """A wall-clock time of day (``HH:MM``) and, optionally, a day (``YYYY-MM-DD``): a
    local-time send's, as a notification keeps it."""

    local_time: str
    date: str | None = None

    @property
    def clock(self) -> time:
        """``local_time`` as a time of day."""
        return time.fromisoformat(self.local_time)

    @property
    def day(self) -> dt.date | None:
        """``date`` as a date, or None."""
        return None if self.date is None else dt.date.fromisoformat(self.date)


@attrs.frozen
class DeliverAt(LocalTime):
    """A local-time send: each recipient gets it at ``local_time`` in their own zone,
    the next such time, or on ``date``."""

    local_time: str = attrs.field(
        validator=v.Rule(_clock_time, {"pattern": CLOCK_TIME_PATTERN}),
        metadata=v.about("The wall-clock time, HH:MM.", example="09:00"),
    )
    date: str | None = attrs.field(
        default=None,
        validator=v.Rule(_calendar_date, {"pattern": DATE_PATTERN, "format": "date"}),
        metadata=v.about(
            "The day, YYYY-MM-DD; without it, the next time the recipient's clock shows "
            "`localTime`.",
            example="2036-01-01",
        ),
    )


def as_kept(value: LocalTime | None) -> LocalTime | None:
    """``value`` as a notification keeps it (a plain :class:`LocalTime`), or None."""
    return None if value is None else LocalTime(value.local_time, value.date)


def deliver_at_errors(
    deliver_at: LocalTime, now: datetime, field: str = "deliverAt"
) -> list[FieldError]:
    """Problems of a valid-looking ``deliver_at`` at ``now``: a date more than 30 days ahead
    (in the zone whose clocks show it last)."""
    day = deliver_at.day
    if day is None:
        return []
    latest = datetime.combine(day, deliver_at.clock, tzinfo=UTC) + _LATEST_OFFSET
    if latest - now > LOCAL_AHEAD_MAX:
        return [FieldError(f"{field}.date", "must be at most 30 days ahead")]
    return []


def due_by_zone(deliver_at: LocalTime, zones: Iterable[str], now: datetime) -> dict[str, datetime]:
    """Each zone's due time for ``deliver_at`` at ``now``, in whole milliseconds."""
    clock, day = deliver_at.clock, deliver_at.day
    return {
        name: in_milliseconds(next_local_time(clock, day, ZoneInfo(name), now))
        for name in sorted(set(zones))
    }


def earliest(dues: Mapping[str, datetime], now: datetime) -> datetime:
    """The earliest of ``dues`` (the notification's ``scheduledAt``), ``now`` if none."""
    return min(dues.values(), default=in_milliseconds(now))


def latest(dues: Mapping[str, datetime], now: datetime) -> datetime:
    """The latest of ``dues`` (what a ``ttl`` counts from), ``now`` if none."""
    return max(dues.values(), default=in_milliseconds(now))


def deliver_at_text(deliver_at: LocalTime) -> str:
    """``deliver_at`` as one JSON text, ``["09:00", "2026-12-24"]`` (the date null when none)."""
    return json.dumps([deliver_at.local_time, deliver_at.date])


def deliver_at_of_text(text: str) -> LocalTime:
    """The inverse of :func:`deliver_at_text`."""
    local_time, day = json.loads(text)
    return LocalTime(local_time, day)

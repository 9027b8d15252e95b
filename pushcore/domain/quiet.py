"""Quiet hours: when a person's devices wait, or go quietly (API.md, "The recipient's time").

The rule for the hard cases, written once:

- A quiet period starts on each listed day at ``start`` (the person's wall
  clock) and ends at the next ``end``: the same day when ``end`` is later,
  else the day after (22:00-07:00 listed for Friday is Friday night into
  Saturday morning). ``start == end`` is refused where the setting is made.
- Start and end follow pushcore.domain.localtime's daylight-saving rule: a
  missing time is shifted by the gap, a doubled one is the first.
- A delivery due at an instant inside a period is held until that period's
  end (or sent quietly); at the end itself it is outside.
"""

from __future__ import annotations

import enum
from collections.abc import Iterator
from datetime import datetime, time, timedelta
from zoneinfo import ZoneInfo

import attrs

from pushcore.domain.localtime import local_date, to_utc
from pushcore.domain.model import Priority

DAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")


class QuietMode(enum.StrEnum):
    """What quiet hours do to a push that falls due inside them."""

    HOLD = "hold"
    SILENT = "silent"


@attrs.frozen
class QuietHours:
    """A person's quiet hours; ``days`` are the weekdays a period starts on (0 is Monday)."""

    start: time
    end: time
    days: frozenset[int] = frozenset(range(7))
    mode: QuietMode = QuietMode.HOLD
    bypass: frozenset[Priority] = frozenset({Priority.CRITICAL})

    def periods(self, around: datetime, zone: ZoneInfo) -> Iterator[tuple[datetime, datetime]]:
        """The periods (start, end instants) that may contain ``around``: those starting
        on the local day before it, or on its own day."""
        today = local_date(around, zone)
        for day in (today - timedelta(days=1), today):
            if day.weekday() not in self.days:
                continue
            end_day = day if self.end > self.start else day + timedelta(days=1)
            begins, _ = to_utc(datetime.combine(day, self.start), zone)
            ends, _ = to_utc(datetime.combine(end_day, self.end), zone)
            yield begins, ends

    def quiet_until(self, due: datetime, zone: ZoneInfo) -> datetime | None:
        """The end of the quiet period ``due`` falls in, or None when it falls in none."""
        for begins, ends in self.periods(due, zone):
            if begins <= due < ends:
                return ends
        return None

    def lets_through(self, priority: Priority) -> bool:
        """Whether a push of ``priority`` goes out as usual inside quiet hours."""
        return priority in self.bypass

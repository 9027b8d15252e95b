"""Local-time sends' pure rules (pushcore/domain/localtime.py): each zone's due time for a
`deliverAt`, the 30-day limit, and daylight saving by the schedules' one rule."""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta
from zoneinfo import ZoneInfo

from hypothesis import given
from hypothesis import strategies as st

from pushcore.domain.localtime import (
    LOCAL_AHEAD_MAX,
    DeliverAt,
    LocalTime,
    deliver_at_errors,
    deliver_at_of_text,
    deliver_at_text,
    due_by_zone,
    to_utc,
)
from pushcore.domain.timefmt import in_milliseconds

ZONES = [
    "UTC",
    "Europe/Berlin",
    "America/New_York",
    "Australia/Lord_Howe",
    "Asia/Kolkata",
    "Pacific/Chatham",
    "Pacific/Kiritimati",  # UTC+14: the first clocks to show a time
    "Etc/GMT+12",  # UTC-12: the last
]
instants = st.datetimes(
    min_value=datetime(2024, 1, 1), max_value=datetime(2032, 12, 31), timezones=st.just(UTC)
)
clock_times = st.times().map(lambda t: t.replace(second=0, microsecond=0))


def text(t: time) -> str:
    return t.strftime("%H:%M")


@given(clock_times, instants)
def test_without_a_date_each_zone_gets_the_next_such_wall_time(at: time, now: datetime) -> None:
    dues = due_by_zone(LocalTime(text(at)), ZONES, now)
    assert sorted(dues) == sorted(ZONES)
    for name, due in dues.items():
        zone = ZoneInfo(name)
        assert now < due <= now + timedelta(days=2)
        day = due.astimezone(zone).date()
        # That day's time by the one rule (a missing time shifted, a doubled one the first)...
        assert to_utc(datetime.combine(day, at), zone)[0] == due
        # ...and the day before's had passed (to the millisecond the stores keep).
        before, _ = to_utc(datetime.combine(day - timedelta(days=1), at), zone)
        assert before <= now


@given(clock_times, instants, st.integers(-40, 40))
def test_with_a_date_each_zone_gets_that_day_or_now_where_it_has_passed(
    at: time, now: datetime, days: int
) -> None:
    day = now.date() + timedelta(days=days)
    dues = due_by_zone(LocalTime(text(at), day.isoformat()), ZONES, now)
    for name, due in dues.items():
        instant, _ = to_utc(datetime.combine(day, at), ZoneInfo(name))
        assert due == in_milliseconds(max(instant, now))


@given(clock_times, instants, st.integers(0, 40))
def test_the_30_day_limit_holds_in_every_zone_and_refuses_only_past_it(
    at: time, now: datetime, days: int
) -> None:
    day = now.date() + timedelta(days=days)
    asked = LocalTime(text(at), day.isoformat())
    errors = deliver_at_errors(asked, now)
    latest = max(due_by_zone(asked, ZONES, now).values())
    if not errors:
        assert latest - now <= LOCAL_AHEAD_MAX
    else:
        assert [e.field for e in errors] == ["deliverAt.date"]
        # Refused only when the zone whose clocks show it last would be past the limit.
        assert due_by_zone(asked, ["Etc/GMT+12"], now)["Etc/GMT+12"] - now > LOCAL_AHEAD_MAX


def test_daylight_saving_follows_the_schedules_rule() -> None:
    now = datetime(2027, 3, 27, 12, 0, tzinfo=UTC)
    # 02:30 does not exist in Berlin on 28 March 2027: 03:30 CEST, shifted by the gap.
    spring = due_by_zone(LocalTime("02:30"), ["Europe/Berlin"], now)["Europe/Berlin"]
    assert spring == datetime(2027, 3, 28, 1, 30, tzinfo=UTC)
    # 02:30 exists twice on 31 October 2027: the first (CEST).
    autumn = LocalTime("02:30", "2027-10-31")
    first = due_by_zone(autumn, ["Europe/Berlin"], datetime(2027, 10, 30, tzinfo=UTC))
    assert first["Europe/Berlin"] == datetime(2027, 10, 31, 0, 30, tzinfo=UTC)


@given(clock_times, st.one_of(st.none(), st.dates(date(2000, 1, 1), date(2099, 12, 31))))
def test_kept_text_round_trips(at: time, day: date | None) -> None:
    kept = LocalTime(text(at), None if day is None else day.isoformat())
    assert deliver_at_of_text(deliver_at_text(kept)) == kept
    assert DeliverAt(kept.local_time, kept.date).clock == at

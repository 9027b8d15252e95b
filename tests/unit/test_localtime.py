"""The daylight-saving rule and quiet hours (pushcore/domain/localtime.py, quiet.py)."""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pushcore.domain.localtime import next_local_time, to_utc
from pushcore.domain.model import Priority
from pushcore.domain.quiet import QuietHours

BERLIN = ZoneInfo("Europe/Berlin")
ZONES = [ZoneInfo(z) for z in ("Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "UTC")]
zones = st.sampled_from(ZONES)
locals_ = st.datetimes(min_value=datetime(2020, 1, 1), max_value=datetime(2035, 12, 31))
instants = st.datetimes(
    min_value=datetime(2020, 1, 1), max_value=datetime(2035, 12, 31), timezones=st.just(UTC)
)


def wall(instant: datetime, zone: ZoneInfo) -> datetime:
    return instant.astimezone(zone).replace(tzinfo=None)


@given(locals_, zones)
def test_a_wall_time_is_kept_or_shifted_forward_by_the_gap(local: datetime, zone: ZoneInfo) -> None:
    instant, shifted = to_utc(local, zone)
    seen = wall(instant, zone)
    if shifted:
        assert timedelta(0) < seen - local <= timedelta(hours=1)
    else:
        assert seen == local
        # A doubled time is the first of the two: an hour (or half) earlier is another wall time.
        assert wall(instant - timedelta(minutes=30), zone) != local


@pytest.mark.parametrize(
    ("local", "utc", "shifted"),
    [
        (
            datetime(2027, 3, 28, 2, 30),
            datetime(2027, 3, 28, 1, 30, tzinfo=UTC),
            True,
        ),  # 03:30 CEST
        (datetime(2027, 10, 31, 2, 30), datetime(2027, 10, 31, 0, 30, tzinfo=UTC), False),  # first
        (datetime(2027, 7, 1, 9, 0), datetime(2027, 7, 1, 7, 0, tzinfo=UTC), False),
    ],
)
def test_the_berlin_cases(local: datetime, utc: datetime, shifted: bool) -> None:
    assert to_utc(local, BERLIN) == (utc, shifted)


@given(st.times(), instants, zones)
def test_a_local_time_send_without_a_date_is_the_next_such_time(
    at: time, now: datetime, zone: ZoneInfo
) -> None:
    due = next_local_time(at, None, zone, now)
    assert now < due <= now + timedelta(days=2)
    instant, _ = to_utc(datetime.combine(wall(due, zone).date(), at), zone)
    assert instant == due
    # No earlier day would have done: the day before's time had passed.
    earlier, _ = to_utc(datetime.combine(wall(due, zone).date() - timedelta(days=1), at), zone)
    assert earlier <= now


def test_a_local_time_send_on_a_date_that_has_passed_goes_at_once() -> None:
    now = datetime(2026, 12, 24, 10, 0, tzinfo=UTC)  # 11:00 in Berlin
    assert next_local_time(time(9), date(2026, 12, 24), BERLIN, now) == now
    later = next_local_time(time(9), date(2026, 12, 25), BERLIN, now)
    assert later == datetime(2026, 12, 25, 8, 0, tzinfo=UTC)


NIGHTS = QuietHours(time(22), time(7))


def at(day: int, hour: int, minute: int = 0, month: int = 1) -> datetime:
    """An instant by Berlin's clock in 2027 (January: UTC+1)."""
    return datetime(2027, month, day, hour, minute, tzinfo=BERLIN).astimezone(UTC)


@pytest.mark.parametrize(
    ("due", "until"),
    [
        (at(4, 23), at(5, 7)),  # Monday night
        (at(5, 3), at(5, 7)),  # after midnight, the period that began the day before
        (at(5, 6, 59), at(5, 7)),
        (at(5, 7), None),  # the end itself is outside
        (at(5, 21, 59), None),
        (at(5, 22), at(6, 7)),
    ],
)
def test_quiet_hours_across_midnight(due: datetime, until: datetime | None) -> None:
    assert NIGHTS.quiet_until(due, BERLIN) == until


def test_a_period_belongs_to_the_day_it_starts() -> None:
    fridays = QuietHours(time(22), time(7), days=frozenset({4}))  # 2027-01-08 is a Friday
    assert fridays.quiet_until(at(8, 23), BERLIN) == at(9, 7)
    assert fridays.quiet_until(at(9, 3), BERLIN) == at(9, 7)  # Saturday morning: Friday's
    assert fridays.quiet_until(at(9, 23), BERLIN) is None  # Saturday night: not listed
    assert fridays.quiet_until(at(8, 3), BERLIN) is None  # Friday morning: Thursday's


def test_a_daytime_period_and_the_night_the_clocks_change() -> None:
    work = QuietHours(time(9), time(17))
    assert work.quiet_until(at(5, 12), BERLIN) == at(5, 17)
    assert work.quiet_until(at(5, 8), BERLIN) is None
    # 2027-03-28: clocks go forward at 02:00; a night period still ends at 07:00 local.
    spring = NIGHTS.quiet_until(datetime(2027, 3, 28, 1, 30, tzinfo=UTC), BERLIN)
    assert spring == datetime(2027, 3, 28, 5, 0, tzinfo=UTC)  # 07:00 CEST
    autumn = NIGHTS.quiet_until(datetime(2027, 10, 31, 1, 30, tzinfo=UTC), BERLIN)
    assert autumn == datetime(2027, 10, 31, 6, 0, tzinfo=UTC)  # 07:00 CET


@given(instants, zones, st.times(), st.times())
def test_inside_means_before_the_end_and_after_the_start(
    due: datetime, zone: ZoneInfo, start: time, end: time
) -> None:
    if start == end:
        return
    quiet = QuietHours(start, end)
    until = quiet.quiet_until(due, zone)
    if until is not None:
        assert due < until <= due + timedelta(hours=25)


def test_bypass_lets_the_listed_priorities_through() -> None:
    assert NIGHTS.lets_through(Priority.CRITICAL)
    assert not NIGHTS.lets_through(Priority.HIGH)

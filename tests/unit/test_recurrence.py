"""Recurring schedules' time model (pushcore/domain/recurrence.py): the pinned
daylight-saving cases, the RRULE checks of API.md, and properties over every
transition tzdata has for five zones."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from functools import cache
from itertools import islice, pairwise
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pushcore.domain.errors import ValidationError
from pushcore.domain.localtime import to_utc
from pushcore.domain.recurrence import (
    Occurrence,
    check_spacing,
    occurrences,
    occurrences_from,
    parse_rule,
    parse_zone,
)
from pushcore.recurrence.dateutil_rules import DateutilExpander

EXPAND = DateutilExpander()
BERLIN = ZoneInfo("Europe/Berlin")
NEW_YORK = ZoneInfo("America/New_York")
LORD_HOWE = ZoneInfo("Australia/Lord_Howe")
ZONE_NAMES = (
    "Europe/Berlin",
    "America/New_York",
    "Australia/Lord_Howe",
    "Asia/Kolkata",
    "Pacific/Chatham",
)


def first(rrule: str, start: datetime, zone: ZoneInfo, n: int, **kw: object) -> list[Occurrence]:
    return list(islice(occurrences(parse_rule(rrule), start, zone, EXPAND, **kw), n))  # type: ignore[arg-type]


def z(year: int, month: int, day: int, hour: int = 0, minute: int = 0) -> datetime:
    return datetime(year, month, day, hour, minute, tzinfo=UTC)


def test_daily_across_spring_forward_keeps_the_wall_time_and_shifts_the_missing_one() -> None:
    got = first("FREQ=DAILY", datetime(2027, 3, 27, 2, 30), BERLIN, 3)
    assert got == [
        Occurrence(z(2027, 3, 27, 1, 30), datetime(2027, 3, 27, 2, 30), False),
        Occurrence(z(2027, 3, 28, 1, 30), datetime(2027, 3, 28, 2, 30), True),  # 03:30 CEST
        Occurrence(z(2027, 3, 29, 0, 30), datetime(2027, 3, 29, 2, 30), False),
    ]


def test_daily_across_fall_back_fires_once_at_the_first_of_the_doubled_time() -> None:
    got = first("FREQ=DAILY", datetime(2027, 10, 30, 2, 30), BERLIN, 3)
    assert [o.at for o in got] == [
        z(2027, 10, 30, 0, 30),
        z(2027, 10, 31, 0, 30),
        z(2027, 11, 1, 1, 30),
    ]
    assert not any(o.shifted for o in got)


def test_hourly_across_spring_forward_is_one_occurrence_per_elapsed_hour() -> None:
    got = first("FREQ=HOURLY", datetime(2027, 3, 28, 0, 0), BERLIN, 4)
    assert [o.at for o in got] == [
        z(2027, 3, 27, 23),
        z(2027, 3, 28, 0),
        z(2027, 3, 28, 1),
        z(2027, 3, 28, 2),
    ]
    assert [o.local_time.hour for o in got] == [0, 1, 3, 4]


def test_hourly_across_fall_back_fires_in_both_two_oclocks() -> None:
    got = first("FREQ=HOURLY", datetime(2027, 10, 31, 1, 0), BERLIN, 4)
    assert [o.at for o in got] == [
        z(2027, 10, 30, 23),
        z(2027, 10, 31, 0),
        z(2027, 10, 31, 1),
        z(2027, 10, 31, 2),
    ]
    assert [o.local_time.hour for o in got] == [1, 2, 2, 3]


def test_hourly_byhour_follows_the_wall_clock_in_summer_and_winter() -> None:
    rule = "FREQ=HOURLY;BYDAY=MO,TU,WE,TH,FR;BYHOUR=9,10,11,12,13,14,15,16,17"
    winter = first(rule, datetime(2027, 1, 4, 9, 0), NEW_YORK, 9)
    summer = first(rule, datetime(2027, 7, 5, 9, 0), NEW_YORK, 10)
    assert [o.local_time.hour for o in winter] == list(range(9, 18))
    assert [o.local_time.hour for o in summer][:9] == list(range(9, 18))
    assert summer[9].local_time == datetime(2027, 7, 6, 9, 0)
    assert summer[0].at == z(2027, 7, 5, 13)


def test_lord_howe_half_hour_gap_shifts_by_thirty_minutes() -> None:
    # Lord Howe's clocks go from 02:00 to 02:30 on 2027-10-03.
    got = first("FREQ=DAILY", datetime(2027, 10, 2, 2, 15), LORD_HOWE, 3)
    assert [o.shifted for o in got] == [False, True, False]
    assert got[1].at.astimezone(LORD_HOWE).replace(tzinfo=None) == datetime(2027, 10, 3, 2, 45)


def test_a_shifted_time_is_put_in_order_and_a_collision_fires_once() -> None:
    # Berlin: 02:30 shifts onto 03:30, which the rule also names: it fires once.
    got = first("FREQ=DAILY;BYHOUR=2,3;BYMINUTE=0,30", datetime(2027, 3, 28, 0, 0), BERLIN, 4)
    walls = [o.at.astimezone(BERLIN).strftime("%d %H:%M") for o in got]
    assert walls == ["28 03:00", "28 03:30", "29 02:00", "29 02:30"]
    # Lord Howe (02:00 to 02:30): 02:15 shifts to 02:45, after 02:30, which still fires.
    got = first("FREQ=DAILY;BYHOUR=2;BYMINUTE=15,30", datetime(2027, 10, 3, 0, 0), LORD_HOWE, 3)
    walls = [o.at.astimezone(LORD_HOWE).strftime("%d %H:%M") for o in got]
    assert walls == ["03 02:30", "03 02:45", "04 02:15"]
    assert [o.shifted for o in got] == [False, True, False]


def test_count_until_and_exdates() -> None:
    start = datetime(2027, 1, 1, 9, 0)
    assert len(first("FREQ=DAILY;COUNT=5", start, BERLIN, 99)) == 5
    # COUNT counts the rule's instances: an excluded one is not replaced (RFC 5545).
    skipped = first("FREQ=DAILY;COUNT=5", start, BERLIN, 99, exdates=[datetime(2027, 1, 2, 9, 0)])
    assert [o.local_time.day for o in skipped] == [1, 3, 4, 5]
    assert len(first("FREQ=DAILY;UNTIL=20270103T090000", start, BERLIN, 99)) == 3
    assert len(first("FREQ=DAILY;UNTIL=20270103T075959Z", start, BERLIN, 99)) == 2
    since = list(
        occurrences_from(parse_rule("FREQ=DAILY;COUNT=5"), start, BERLIN, EXPAND, z(2027, 1, 4))
    )
    assert [o.local_time.day for o in since] == [4, 5]


@pytest.mark.parametrize(
    "rrule",
    [
        "",
        "DTSTART:20270101T000000;FREQ=DAILY",
        "FREQ=DAILY;DTSTART=20270101T000000",
        "FREQ=SECONDLY",
        "FREQ=FORTNIGHTLY",
        "BYHOUR=9",
        "FREQ=DAILY;COUNT=3;UNTIL=20270101T000000Z",
        "FREQ=DAILY;COUNT=0",
        "FREQ=DAILY;UNTIL=tomorrow",
        "FREQ=DAILY;BYSECOND=0,30",
        "FREQ=DAILY;BYHOUR=24",
        "FREQ=DAILY;FREQ=WEEKLY",
        "FREQ=HOURLY;BYSETPOS=1",
        "FREQ=HOURLY;BYDAY=1MO",
        "FREQ=DAILY;BYMINUTE=" + ",".join(["1"] * 300),
    ],
)
def test_a_bad_rule_is_a_400_naming_rrule(rrule: str) -> None:
    with pytest.raises(ValidationError) as caught:
        parse_rule(rrule)
    assert [d.field for d in caught.value.details] == ["rrule"]


def test_minutely_is_allowed_and_checked_for_spacing() -> None:
    rule = parse_rule("FREQ=MINUTELY;INTERVAL=1")
    check_spacing(rule, datetime(2027, 3, 28, 1, 0), BERLIN, EXPAND)
    got = first("FREQ=MINUTELY", datetime(2027, 3, 28, 1, 59), BERLIN, 2)
    assert got[1].at - got[0].at == timedelta(minutes=1)
    assert got[1].local_time == datetime(2027, 3, 28, 3, 0)


@pytest.mark.parametrize("name", ["+01:00", "UTC+1", "Mars/Olympus", "europe/berlin", "", 5])
def test_a_zone_that_is_not_an_iana_name_is_a_400(name: object) -> None:
    with pytest.raises(ValidationError):
        parse_zone(name)


def test_iana_names_are_zones() -> None:
    assert parse_zone("Europe/Berlin") == BERLIN
    assert parse_zone("UTC") == ZoneInfo("UTC")


# Properties over every transition in tzdata for the five zones of the issue.


@cache
def transitions(name: str) -> tuple[tuple[datetime, timedelta], ...]:
    """Each instant the zone's offset changes (1900-2037), with the change."""
    zone = ZoneInfo(name)
    found: list[tuple[datetime, timedelta]] = []
    at = z(1900, 1, 1)
    offset = at.astimezone(zone).utcoffset()
    while at < z(2037, 12, 31):
        step = at + timedelta(days=1)
        after = step.astimezone(zone).utcoffset()
        if after != offset:
            low, high = at, step
            while high - low > timedelta(seconds=1):
                mid = low + (high - low) / 2
                if mid.astimezone(zone).utcoffset() == offset:
                    low = mid
                else:
                    high = mid
            assert offset is not None
            assert after is not None
            found.append((high.replace(microsecond=0), after - offset))
            offset = after
        at = step
    return tuple(found)


def wall(at: datetime, zone: ZoneInfo) -> datetime:
    return at.astimezone(zone).replace(tzinfo=None)


def check_daily(name: str, when: datetime, hour: int, minute: int) -> None:
    zone = ZoneInfo(name)
    near = [d for t, d in transitions(name) if abs(t - when) < timedelta(days=5)]
    allowed = sum((abs(d) for d in near), timedelta(0))
    start = wall(when - timedelta(days=3), zone).replace(hour=hour, minute=minute, second=0)
    got = first("FREQ=DAILY", start, zone, 6)
    assert len(got) == 6
    for a, b in pairwise(got):
        assert a.at < b.at
        assert abs(b.at - a.at - timedelta(days=1)) <= allowed
    for o in got:
        assert (o.local_time.hour, o.local_time.minute) == (hour, minute)
        seen = wall(o.at, zone)
        if o.shifted:
            assert timedelta(0) < seen - o.local_time <= allowed
        else:
            assert seen == o.local_time


@pytest.mark.parametrize("name", ZONE_NAMES)
def test_daily_rules_over_every_transition(name: str) -> None:
    assert transitions(name), f"tzdata lists no transitions for {name}"
    for when, _ in transitions(name):
        local = wall(when, ZoneInfo(name))
        # The wall time at the change itself (in the gap or the doubled hour), and one after.
        for moment in (local - timedelta(minutes=1), local + timedelta(minutes=45)):
            check_daily(name, when, moment.hour, moment.minute)


@pytest.mark.parametrize("name", ZONE_NAMES)
def test_hourly_rules_over_every_transition_step_in_elapsed_time(name: str) -> None:
    zone = ZoneInfo(name)
    for when, _ in transitions(name):
        start = wall(when - timedelta(hours=3), zone).replace(minute=0, second=0)
        got = first("FREQ=HOURLY", start, zone, 7)
        gaps = {b.at - a.at for a, b in pairwise(got)}
        assert gaps == {timedelta(hours=1)}


rules = st.one_of(
    st.builds(
        lambda h, m, i: (
            f"FREQ=DAILY;INTERVAL={i};BYHOUR={','.join(map(str, sorted(h)))};BYMINUTE={m}"
        ),
        st.sets(st.integers(0, 23), min_size=1, max_size=4),
        st.sampled_from([0, 15, 30, 45, 59]),
        st.integers(1, 3),
    ),
    st.builds(lambda d: f"FREQ=WEEKLY;BYDAY={d}", st.sampled_from(["MO", "SU", "MO,TH", "SA,SU"])),
    st.builds(lambda i: f"FREQ=HOURLY;INTERVAL={i}", st.integers(1, 5)),
    st.builds(lambda i: f"FREQ=MINUTELY;INTERVAL={i}", st.sampled_from([1, 7, 30, 90])),
)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(ZONE_NAMES), st.data(), rules, st.integers(-180, 180))
def test_any_rule_near_any_transition_is_strictly_increasing(
    name: str, data: st.DataObject, rrule: str, minutes: int
) -> None:
    zone = ZoneInfo(name)
    when, _ = data.draw(st.sampled_from(transitions(name)))
    start = wall(when + timedelta(minutes=minutes) - timedelta(hours=6), zone).replace(second=0)
    got = first(rrule, start, zone, 40)
    instants = [o.at for o in got]
    assert instants == sorted(set(instants))
    for o in got:
        assert o.shifted or wall(o.at, zone) == o.local_time
    if "DAILY" in rrule or "WEEKLY" in rrule:
        # No wall time the rule names is lost: each fires, or its instant already does.
        fired = set(instants)
        for named in islice(EXPAND.walls(rrule, start), 30):
            assert to_utc(named, zone)[0] in fired

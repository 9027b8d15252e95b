"""Restarting an expansion at a stored position (pushcore/domain/recurrence.py):
what the schedules' materialiser keeps so it never expands from DTSTART again."""

from __future__ import annotations

from datetime import datetime, timedelta
from itertools import islice
from zoneinfo import ZoneInfo

from hypothesis import given, settings
from hypothesis import strategies as st

from pushcore.domain.recurrence import parse_rule, positioned
from pushcore.recurrence.dateutil_rules import DateutilExpander
from tests.unit.test_recurrence import ZONE_NAMES, transitions, wall

EXPAND = DateutilExpander()
rules = st.sampled_from(
    [
        "FREQ=DAILY;BYHOUR=2,3;BYMINUTE=0,30",
        "FREQ=DAILY;INTERVAL=2",
        "FREQ=WEEKLY;INTERVAL=2;BYDAY=MO,SU",
        "FREQ=MONTHLY;BYDAY=-1FR;BYHOUR=2;BYMINUTE=30",
        "FREQ=MONTHLY;BYMONTHDAY=31",
        "FREQ=HOURLY;INTERVAL=3;BYMINUTE=0,30",
        "FREQ=MINUTELY;INTERVAL=45;BYHOUR=1,2,3,9",
        "FREQ=DAILY;COUNT=30",
        "FREQ=HOURLY;COUNT=50",
    ]
)


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(ZONE_NAMES), st.data(), rules, st.integers(-3000, 3000), st.integers(0, 39))
def test_a_restart_at_any_position_yields_what_expanding_from_the_start_does(
    name: str, data: st.DataObject, rrule: str, minutes: int, cut: int
) -> None:
    zone = ZoneInfo(name)
    when, _ = data.draw(st.sampled_from(transitions(name)[-60:]))
    start = wall(when + timedelta(minutes=minutes) - timedelta(days=3), zone).replace(second=0)
    rule = parse_rule(rrule)
    exdates = (start + timedelta(days=2),)
    full = list(islice(positioned(rule, start, zone, EXPAND, exdates), 60))
    restarts = [(i, p) for i, (_, p) in enumerate(full) if p is not None and i >= cut]
    if not restarts:
        return
    index, position = restarts[0]
    again = list(islice(positioned(rule, start, zone, EXPAND, exdates, position), 60 - index))
    assert [o for o, _ in again] == [o for o, _ in full[index:]]


def test_wall_rules_do_not_restart_next_to_a_clock_change() -> None:
    berlin = ZoneInfo("Europe/Berlin")
    rule = parse_rule("FREQ=DAILY;BYHOUR=2,3;BYMINUTE=0,30")
    found = list(islice(positioned(rule, datetime(2027, 3, 27), berlin, EXPAND), 8))
    on_the_day = [p for o, p in found if o.at.astimezone(berlin).day == 28]
    assert on_the_day
    assert all(p is None for p in on_the_day)

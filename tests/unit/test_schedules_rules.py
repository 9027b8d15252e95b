"""Recurring schedules' pure rules (pushcore/domain/schedules.py): timing fields as
API.md pins them, states, the preview and catch-up after an outage."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pushcore.domain.errors import ScheduleEnded, ValidationError
from pushcore.domain.schedules import (
    CatchUp,
    CatchUpMode,
    ScheduleAction,
    ScheduleState,
    catch_up,
    next_state,
    parse_timing,
    preview_limit,
)
from pushcore.recurrence.dateutil_rules import DateutilExpander

EXPAND = DateutilExpander()
NOW = datetime(2027, 3, 1, 12, 0, 30, tzinfo=UTC)


def fields(body: dict[str, object]) -> list[str]:
    with pytest.raises(ValidationError) as caught:
        parse_timing(body, NOW, EXPAND)
    return [d.field for d in caught.value.details]


def test_every_bad_field_is_named_at_once() -> None:
    body: dict[str, object] = {
        "rrule": "FREQ=SECONDLY",
        "timeZone": "+01:00",
        "start": "2027-03-14T09:00:00+01:00",
        "exdates": ["yesterday"],
        "catchUp": {"mode": "some", "window": 59},
    }
    assert fields(body) == [
        "rrule",
        "timeZone",
        "start",
        "exdates[0]",
        "catchUp.mode",
        "catchUp.window",
    ]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"rrule": "FREQ=DAILY", "exdates": ["2027-01-01T09:00:00"] * 501}, "exdates"),
        ({"rrule": "FREQ=DAILY", "catchUp": {"window": 604801}}, "catchUp.window"),
        ({"rrule": "FREQ=DAILY", "catchUp": {"window": True}}, "catchUp.window"),
        ({"rrule": "FREQ=DAILY", "catchUp": "latest"}, "catchUp"),
        ({"rrule": "FREQ=DAILY", "start": "2027-03-14"}, "start"),
        ({"rrule": "FREQ=DAILY", "timeZone": "Mars/Olympus"}, "timeZone"),
        ({}, "rrule"),
    ],
)
def test_a_bad_field_is_a_400_naming_it(body: dict[str, object], field: str) -> None:
    assert fields(body) == [field]


def test_defaults_start_now_in_utc_with_latest_catch_up() -> None:
    timing, rule = parse_timing({"rrule": "FREQ=DAILY"}, NOW, EXPAND)
    # This minute (NOW is 12:00:30): a rule's left-out BYSECOND comes from DTSTART.
    assert (timing.start, str(timing.zone), timing.exdates) == (
        datetime(2027, 3, 1, 12, 0),
        "UTC",
        (),
    )
    assert rule == CatchUp(CatchUpMode.LATEST, 3600)


def test_the_preview_shows_the_pinned_shift() -> None:
    body = {"rrule": "FREQ=DAILY", "start": "2027-03-26T02:30:00", "timeZone": "Europe/Berlin"}
    timing, _ = parse_timing(body, NOW, EXPAND)
    got = timing.preview(EXPAND, datetime(2027, 3, 27, 12, tzinfo=UTC), 2)
    assert [(o.local_time.isoformat(), o.shifted) for o in got] == [
        ("2027-03-28T02:30:00", True),
        ("2027-03-29T02:30:00", False),
    ]
    assert got[0].at == datetime(2027, 3, 28, 1, 30, tzinfo=UTC)


@pytest.mark.parametrize(("given_", "limit"), [(None, 10), ("1", 1), ("100", 100)])
def test_the_preview_limit(given_: str | None, limit: int) -> None:
    assert preview_limit(given_) == limit


@pytest.mark.parametrize("given_", ["0", "101", "-1", "ten", ""])
def test_a_bad_preview_limit_is_a_400(given_: str) -> None:
    with pytest.raises(ValidationError):
        preview_limit(given_)


def test_states() -> None:
    assert next_state(ScheduleState.ACTIVE, ScheduleAction.PAUSE) is ScheduleState.PAUSED
    assert next_state(ScheduleState.PAUSED, ScheduleAction.PAUSE) is ScheduleState.PAUSED
    assert next_state(ScheduleState.PAUSED, ScheduleAction.RESUME) is ScheduleState.ACTIVE
    assert next_state(ScheduleState.ACTIVE, ScheduleAction.TRIGGER) is ScheduleState.ACTIVE
    for action in ScheduleAction:
        with pytest.raises(ScheduleEnded) as caught:
            next_state(ScheduleState.COMPLETED, action)
        assert caught.value.code == "schedule_ended"


def minutes_ago(*minutes: int) -> list[datetime]:
    return [NOW - timedelta(minutes=m) for m in minutes]


def test_catch_up_modes() -> None:
    missed = minutes_ago(90, 50, 20, 5)
    assert catch_up(missed, NOW, CatchUp(CatchUpMode.LATEST, 3600)) == (minutes_ago(5), 3)
    assert catch_up(missed, NOW, CatchUp(CatchUpMode.ALL, 3600)) == (minutes_ago(50, 20, 5), 1)
    assert catch_up(missed, NOW, CatchUp(CatchUpMode.SKIP, 3600)) == ([], 4)
    assert catch_up(minutes_ago(90), NOW, CatchUp(CatchUpMode.LATEST, 3600)) == ([], 1)


@given(
    st.lists(st.integers(0, 10_000), unique=True).map(lambda m: sorted(m, reverse=True)),
    st.sampled_from(list(CatchUpMode)),
    st.integers(60, 604_800),
)
def test_catch_up_sends_within_the_window_and_counts_every_other_as_missed(
    minutes: list[int], mode: CatchUpMode, window: int
) -> None:
    missed = minutes_ago(*minutes)
    send, count = catch_up(missed, NOW, CatchUp(mode, window))
    assert len(send) + count == len(missed)
    assert all(NOW - at <= timedelta(seconds=window) for at in send)
    assert len(send) <= {CatchUpMode.SKIP: 0, CatchUpMode.LATEST: 1, CatchUpMode.ALL: 10}[mode]
    assert send == sorted(send)
    if send:
        assert send[-1] == max(at for at in missed if NOW - at <= timedelta(seconds=window))

"""Delay presets, due-time resolution and schedule limits (pushcore.domain.scheduling)."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pushcore.domain.errors import FieldError
from pushcore.domain.scheduling import (
    DEFAULT_DELAY,
    DELAY_PATTERN,
    Delay,
    delay_error,
    parse_duration,
    resolve_due_time,
    schedule_errors,
    up_to,
)

# The spec's presets, written out independently of the domain's parsing.
PRESETS = {"5s": 5, "30s": 30, "1m": 60, "5m": 300, "15m": 900, "30m": 1800, "1h": 3600}
THIRTY_DAYS = timedelta(days=30)
NOW = datetime(2026, 11, 21, 10, 0, 0, tzinfo=UTC)

offsets = st.builds(
    timezone,
    st.integers(-23 * 60 - 59, 23 * 60 + 59).map(lambda minutes: timedelta(minutes=minutes)),
)
nows = st.datetimes(
    min_value=datetime(2000, 1, 1), max_value=datetime(2100, 1, 1), timezones=st.just(UTC)
)
presets = st.sampled_from([d for d in Delay if d is not Delay.CUSTOM])
delays = st.none() | st.sampled_from(list(Delay))
custom_delays = st.integers(1, 86_400)
# Offsets of scheduledAt from now: well in the past to beyond the 30-day limit.
schedule_offsets = st.timedeltas(min_value=timedelta(days=-400), max_value=timedelta(days=40))


def fields(errors: list[FieldError]) -> list[str]:
    return [e.field for e in errors]


def test_presets_match_the_spec() -> None:
    assert {d.value for d in Delay} == {*PRESETS, "custom"}
    assert DEFAULT_DELAY is Delay.S5
    for value, seconds in PRESETS.items():
        assert resolve_due_time(NOW, Delay(value), None, None) == NOW + timedelta(seconds=seconds)


@given(nows, presets)
def test_a_preset_gives_now_plus_its_seconds(now: datetime, delay: Delay) -> None:
    assert schedule_errors(now, delay, None, None) == []
    due = resolve_due_time(now, delay, None, None)
    assert due == now + timedelta(seconds=PRESETS[delay.value])


@given(nows)
def test_no_delay_means_the_default_5s(now: datetime) -> None:
    assert schedule_errors(now, None, None, None) == []
    assert resolve_due_time(now, None, None, None) == now + timedelta(seconds=5)


@given(nows, custom_delays)
def test_custom_uses_custom_delay(now: datetime, custom: int) -> None:
    assert schedule_errors(now, Delay.CUSTOM, custom, None) == []
    assert resolve_due_time(now, Delay.CUSTOM, custom, None) == now + timedelta(seconds=custom)


@given(nows, presets | st.none(), st.timedeltas(min_value=timedelta(0), max_value=THIRTY_DAYS))
def test_scheduled_at_overrides_delay(now: datetime, delay: Delay | None, ahead: timedelta) -> None:
    scheduled_at = now + ahead
    assert schedule_errors(now, delay, None, scheduled_at) == []
    assert resolve_due_time(now, delay, None, scheduled_at) == scheduled_at


@given(nows, custom_delays, st.timedeltas(min_value=timedelta(0), max_value=THIRTY_DAYS))
def test_scheduled_at_overrides_a_custom_delay(
    now: datetime, custom: int, ahead: timedelta
) -> None:
    scheduled_at = now + ahead
    assert schedule_errors(now, Delay.CUSTOM, custom, scheduled_at) == []
    assert resolve_due_time(now, Delay.CUSTOM, custom, scheduled_at) == scheduled_at


@given(nows, delays, st.timedeltas(min_value=timedelta(days=-400), max_value=timedelta(0)))
def test_a_past_or_present_scheduled_at_means_now(
    now: datetime, delay: Delay | None, behind: timedelta
) -> None:
    scheduled_at = now + behind
    custom = 60 if delay is Delay.CUSTOM else None
    assert schedule_errors(now, delay, custom, scheduled_at) == []
    assert resolve_due_time(now, delay, custom, scheduled_at) == now


@given(nows, st.timedeltas(min_value=-THIRTY_DAYS, max_value=THIRTY_DAYS), offsets)
def test_scheduled_at_in_any_offset_is_the_same_instant(
    now: datetime, ahead: timedelta, tz: timezone
) -> None:
    scheduled_at = (now + ahead).astimezone(tz)
    assert schedule_errors(now, None, None, scheduled_at) == []
    due = resolve_due_time(now, None, None, scheduled_at)
    assert due == max(now + ahead, now)


@given(nows, delays, st.none() | custom_delays, st.none() | schedule_offsets)
def test_a_valid_schedule_resolves_to_a_time_not_before_now(
    now: datetime,
    delay: Delay | None,
    custom: int | None,
    offset: timedelta | None,
) -> None:
    scheduled_at = None if offset is None else now + offset
    if schedule_errors(now, delay, custom, scheduled_at):
        return
    due = resolve_due_time(now, delay, custom, scheduled_at)
    assert due >= now
    assert due - now <= THIRTY_DAYS


@given(nows, delays, st.none() | custom_delays, st.none() | schedule_offsets)
def test_schedule_errors_are_exactly_the_documented_ones(
    now: datetime,
    delay: Delay | None,
    custom: int | None,
    offset: timedelta | None,
) -> None:
    scheduled_at = None if offset is None else now + offset
    expected = set()
    if custom is not None and delay is not Delay.CUSTOM:
        expected.add("customDelay")
    if delay is Delay.CUSTOM and custom is None and scheduled_at is None:
        expected.add("customDelay")
    if offset is not None and offset > THIRTY_DAYS:
        expected.add("scheduledAt")
    errors = schedule_errors(now, delay, custom, scheduled_at)
    assert set(fields(errors)) == expected
    assert len(errors) == len(set(fields(errors)))


@given(nows, st.none() | presets, custom_delays)
def test_custom_delay_without_custom_is_an_error(
    now: datetime, delay: Delay | None, custom: int
) -> None:
    errors = schedule_errors(now, delay, custom, None)
    assert errors == [FieldError("customDelay", "is only allowed when delay is custom")]


@given(nows)
def test_custom_without_custom_delay_is_an_error(now: datetime) -> None:
    errors = schedule_errors(now, Delay.CUSTOM, None, None)
    assert errors == [FieldError("customDelay", "is required when delay is custom")]


@given(nows, st.timedeltas(min_value=timedelta(microseconds=1), max_value=timedelta(days=3650)))
def test_more_than_30_days_ahead_is_an_error(now: datetime, beyond: timedelta) -> None:
    errors = schedule_errors(now, None, None, now + THIRTY_DAYS + beyond)
    assert errors == [FieldError("scheduledAt", "must be at most 30 days ahead")]


@given(nows)
def test_exactly_30_days_ahead_is_allowed(now: datetime) -> None:
    scheduled_at = now + THIRTY_DAYS
    assert schedule_errors(now, None, None, scheduled_at) == []
    assert resolve_due_time(now, None, None, scheduled_at) == scheduled_at


def test_several_schedule_errors_are_reported_together() -> None:
    errors = schedule_errors(NOW, Delay.M5, 10, NOW + timedelta(days=31))
    assert fields(errors) == ["customDelay", "scheduledAt"]


@pytest.mark.parametrize("delay", [Delay.S5, Delay.H1, None])
def test_limit_boundaries_with_a_fixed_now(delay: Delay | None) -> None:
    ok = NOW + THIRTY_DAYS
    too_far = ok + timedelta(milliseconds=1)
    assert schedule_errors(NOW, delay, None, ok) == []
    assert fields(schedule_errors(NOW, delay, None, too_far)) == ["scheduledAt"]


UNITS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}


@given(st.integers(0, 10**7), st.sampled_from(sorted(UNITS)))
def test_a_duration_is_a_number_and_a_unit(number: int, unit: str) -> None:
    assert parse_duration(f"{number}{unit}") == number * UNITS[unit]


@pytest.mark.parametrize("text", ["", "s", "1.5s", "1w", "-1s", " 5s", "5 s", "1h30m", "1" * 13])
def test_what_is_not_a_duration(text: str) -> None:
    assert parse_duration(text) is None


@pytest.mark.parametrize(("preset", "seconds"), PRESETS.items())
def test_each_preset_is_also_a_duration(preset: str, seconds: int) -> None:
    assert parse_duration(preset) == seconds
    assert delay_error(preset) is None


@given(st.integers(1, 3000))
def test_up_to_matches_exactly_the_numbers_from_one_to_n(n: int) -> None:
    pattern = re.compile(f"^({up_to(n)})$")
    for number in range(n + 2):
        assert bool(pattern.match(str(number))) is (1 <= number <= n), (n, number)
    assert not pattern.match(f"0{n}")


@given(st.sampled_from(sorted(UNITS)), st.data())
def test_the_delay_pattern_allows_only_delays_the_server_takes(
    unit: str, data: st.DataObject
) -> None:
    number = data.draw(st.integers(0, 2 * 30 * 86400 // UNITS[unit]))
    text = f"{number}{unit}"
    allowed = re.fullmatch(DELAY_PATTERN, text) is not None
    assert allowed is (delay_error(text) is None)
    assert allowed is (1 <= number * UNITS[unit] <= 30 * 86400)

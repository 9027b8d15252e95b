"""The recipient's rules (pushcore.domain.recipient): what a push does inside quiet hours,
a snooze or a mute, and which held pushes a newer one of the same key replaces."""

from __future__ import annotations

from datetime import UTC, datetime, time, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from pushcore.domain.model import Priority
from pushcore.domain.quiet import QuietHours, QuietMode
from pushcore.domain.recipient import (
    Hold,
    Mute,
    Muted,
    RecipientSettings,
    Send,
    decide,
    superseded,
)

T0 = datetime(2026, 11, 21, 10, 0, tzinfo=UTC)
instants = st.datetimes(
    min_value=datetime(2026, 1, 1), max_value=datetime(2028, 1, 1), timezones=st.just(UTC)
)
clock_times = st.times().map(lambda t: t.replace(second=0, microsecond=0))
hours = st.builds(
    QuietHours,
    clock_times,
    clock_times,
    st.frozensets(st.integers(0, 6), min_size=1),
    st.sampled_from(QuietMode),
    st.frozensets(st.sampled_from([Priority.HIGH, Priority.CRITICAL])),
).filter(lambda h: h.start != h.end)
zones = st.sampled_from(["UTC", "Europe/Berlin", "America/New_York", "Asia/Kolkata"])
account_settings = st.builds(RecipientSettings, zones, st.none() | hours, st.none() | instants)
mutes = st.none() | st.builds(Mute, st.none() | instants, st.booleans())


@given(account_settings, mutes, st.sampled_from(Priority), instants)
@settings(max_examples=60)
def test_a_hold_ends_after_the_instant_and_a_bypass_is_never_held(
    s: RecipientSettings, mute: Mute | None, priority: Priority, at: datetime
) -> None:
    decision = decide(s, mute, priority, at)
    if isinstance(decision, Hold):
        assert decision.until > at
        assert s.quiet_until(at) is not None
    if mute is None and s.bypassed_by(priority):
        assert decision == Send()
    if s.quiet_until(at) is None and not isinstance(decision, Muted):
        assert decision == Send()


@given(account_settings, st.sampled_from(Priority), instants)
@settings(max_examples=60)
def test_without_a_mute_nothing_is_muted(
    s: RecipientSettings, priority: Priority, at: datetime
) -> None:
    assert not isinstance(decide(s, None, priority, at), Muted)


def test_the_pinned_cases() -> None:
    night = QuietHours(time(22), time(7))
    berlin = RecipientSettings("Europe/Berlin", night)
    late = datetime(2026, 11, 21, 23, 0, tzinfo=UTC)  # 00:00 in Berlin
    morning = datetime(2026, 11, 22, 6, 0, tzinfo=UTC)  # 07:00 in Berlin
    assert decide(berlin, None, Priority.NORMAL, late) == Hold(morning)
    assert decide(berlin, None, Priority.CRITICAL, late) == Send()
    assert decide(berlin, None, Priority.NORMAL, morning) == Send()  # the end is outside
    silent = RecipientSettings(
        "Europe/Berlin", QuietHours(time(22), time(7), mode=QuietMode.SILENT)
    )
    assert decide(silent, None, Priority.HIGH, late) == Send(quiet=True)
    # A snooze holds whatever the mode, until it ends.
    snoozed = RecipientSettings("UTC", silent.quiet_hours, T0 + timedelta(hours=1))
    assert decide(snoozed, None, Priority.HIGH, T0) == Hold(T0 + timedelta(hours=1))
    # A mute: critical through when allowed, else high (and muted).
    muted = Mute(T0 + timedelta(hours=1))
    plain = RecipientSettings()
    assert decide(plain, muted, Priority.HIGH, T0) == Muted()
    assert decide(plain, muted, Priority.CRITICAL, T0) == Send()
    assert decide(plain, Mute(muted.muted_until, False), Priority.CRITICAL, T0) == Muted()
    assert decide(plain, muted, Priority.HIGH, T0 + timedelta(hours=1)) == Send()
    # allowCritical false outside a mute: critical is high for quiet hours too.
    utc_night = RecipientSettings("UTC", QuietHours(time(9), time(11)))
    assert decide(utc_night, Mute(None, False), Priority.CRITICAL, T0) == Hold(
        T0 + timedelta(hours=1)
    )


def test_only_the_newest_per_device_and_key_goes_out() -> None:
    held = [
        ("dlv_1", "dev_a", "score", T0),
        ("dlv_2", "dev_a", "score", T0 + timedelta(seconds=1)),
        ("dlv_3", "dev_b", "score", T0),
        ("dlv_4", "dev_a", None, T0),
        ("dlv_5", "dev_a", None, T0 + timedelta(seconds=2)),
        ("dlv_6", "dev_a", "other", T0),
    ]
    assert superseded(held) == {"dlv_1"}

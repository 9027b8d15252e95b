"""The retry schedule (pushcore.domain.retry): bounded waits that outlast an outage."""

from __future__ import annotations

import random
from datetime import timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pushcore import load_settings
from pushcore.config import retry_policy
from pushcore.domain.errors import ConfigError
from pushcore.domain.retry import RetryPolicy

draws = st.floats(0.0, 1.0, exclude_max=True)


@st.composite
def policies(draw: st.DrawFn) -> RetryPolicy:
    """Any schedule the settings accept (bounded so that it needs at most 1000 tries)."""
    min_delay = draw(st.floats(0.1, 60.0))
    max_delay = draw(st.floats(min_delay, 3600.0))
    max_age = draw(st.floats(0.0, min(7 * 86400.0, max_delay * 400)))
    return RetryPolicy(draw(st.integers(1, 50)), max_age, min_delay, max_delay)


@given(policies(), st.integers(1, 2000), draws)
def test_every_wait_is_between_the_floor_and_the_cap(
    policy: RetryPolicy, attempts: int, u: float
) -> None:
    assert policy.min_delay <= policy.delay(attempts, lambda: u) <= policy.max_delay


@given(policies(), st.randoms(use_true_random=False))
def test_retries_span_the_maximum_age_before_giving_up(
    policy: RetryPolicy, jitter: random.Random
) -> None:
    # Whatever the jitter draws, the waits until the last try add up to max_age.
    attempts, window = 1, 0.0
    while not policy.gives_up(attempts):
        window += policy.delay(attempts, jitter.random)
        attempts += 1
    assert window >= policy.max_age
    assert attempts >= policy.max_attempts


@given(policies(), st.integers(1, 2000), draws, st.floats(0.0, 86400.0))
def test_retry_after_is_a_floor(
    policy: RetryPolicy, attempts: int, u: float, retry_after: float
) -> None:
    assert policy.delay(attempts, lambda: u, retry_after) >= retry_after


@given(st.integers(1, 30))
def test_the_jitter_spreads_a_fan_out_over_half_the_ceiling(attempts: int) -> None:
    policy = RetryPolicy()
    ceiling = min(policy.max_delay, 2.0**attempts)
    soonest, latest = policy.delay(attempts, lambda: 0.0), policy.delay(attempts, lambda: 0.999)
    assert soonest == pytest.approx(ceiling / 2)
    assert latest == pytest.approx(ceiling, rel=1e-3)


def test_the_defaults_cover_an_hour_and_start_at_a_second() -> None:
    policy = retry_policy(load_settings(env={}))

    assert policy.delay(1, lambda: 0.0) == 1.0  # not within milliseconds of a 5xx
    assert policy.delay(30, lambda: 0.999) <= 600
    shortest = sum(policy.delay(a, lambda: 0.0) for a in range(1, policy.attempt_limit))
    assert shortest >= 3600
    assert policy.attempt_limit == 21


def test_with_no_maximum_age_the_attempts_alone_decide() -> None:
    policy = RetryPolicy(max_attempts=3, max_age=0)

    assert [policy.gives_up(a) for a in (1, 2, 3)] == [False, False, True]


def test_retry_settings_are_durations() -> None:
    settings = load_settings(
        env={
            "PUSHCORE_RETRY_MAX_AGE": "2h",
            "PUSHCORE_RETRY_MIN_DELAY": "500ms",
            "PUSHCORE_RETRY_MAX_DELAY": "90",
            "PUSHCORE_RETRY_MAX_ATTEMPTS": "7",
        }
    )

    assert settings.retry_max_age == timedelta(hours=2)
    policy = retry_policy(settings)
    assert (policy.max_attempts, policy.max_age) == (7, 7200.0)
    assert (policy.min_delay, policy.max_delay) == (0.5, 90.0)


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("PUSHCORE_RETRY_MAX_AGE", "an hour"),
        ("PUSHCORE_RETRY_MAX_AGE", "8d"),
        ("PUSHCORE_RETRY_MIN_DELAY", "0"),
        ("PUSHCORE_RETRY_MAX_DELAY", "500ms"),  # below the 1 s floor
        ("PUSHCORE_RETRY_MAX_ATTEMPTS", "0"),
    ],
)
def test_a_bad_retry_setting_is_named(name: str, value: str) -> None:
    with pytest.raises(ConfigError, match=f"^{name}: "):
        load_settings(env={name: value})


def test_a_schedule_needing_too_many_tries_is_refused() -> None:
    env = {"PUSHCORE_RETRY_MAX_AGE": "7d", "PUSHCORE_RETRY_MAX_DELAY": "1s"}
    with pytest.raises(ConfigError, match=r"^PUSHCORE_RETRY_MAX_AGE: would take more than 1000"):
        load_settings(env=env)

"""Delay presets, durations, due-time resolution and the limits of the spec."""

from __future__ import annotations

import enum
import re
from datetime import datetime, timedelta

from pushcore.domain.errors import FieldError


class Delay(enum.StrEnum):
    """The spec's delay presets (each is also a duration), and ``custom``."""

    S5 = "5s"
    S30 = "30s"
    M1 = "1m"
    M5 = "5m"
    M15 = "15m"
    M30 = "30m"
    H1 = "1h"
    CUSTOM = "custom"


_SECONDS_PER_UNIT = {"s": 1, "m": 60, "h": 3600, "d": 86400}
# Bounded digits: no duration anything accepts needs more, and int() of a very long
# digit string is slow.
_DURATION = re.compile(r"([0-9]{1,12})([smhd]?)")

DURATION_SYNTAX = "30s, 15m, 1h, 7d or a number of seconds"
"""How a sender writes a duration, the same in the API's `delay` and pushctl's --delay and
--ttl (settings take these and more: ``500ms``, ``1.5s``)."""


def parse_duration(text: str) -> int | None:
    """``text`` (``90s``, ``15m``, ``2h``, ``1d`` or ``90``) in seconds; None when it is
    not written that way."""
    match = _DURATION.fullmatch(text)
    if match is None:
        return None
    number, unit = match.groups()
    return int(number) * _SECONDS_PER_UNIT[unit or "s"]


DEFAULT_DELAY = Delay.S5
CUSTOM_DELAY_MIN = 1
CUSTOM_DELAY_MAX = 86_400
MAX_SCHEDULE_AHEAD = timedelta(days=30)
# A due notification with no device waits this long for one before it fails.
NO_DEVICE_GRACE = timedelta(hours=24)

TITLE_MAX = 200
BODY_MAX = 2000
SENDER_NAME_MAX = 50
SENDER_ICON_MAX_BYTES = 5 * 1024 * 1024
METADATA_MAX_KEYS = 50
METADATA_MAX_BYTES = 4096
STREAM_NAME_MAX = 50
STREAM_DESCRIPTION_MAX = 200
FREE_PLAN_STREAMS = 3
KEY_NAME_MAX = 100
DEVICE_NAME_MAX = 100
DEVICE_TOKEN_MAX = 4096
MAX_BATCH = 500


DELAY_MIN = 1
DELAY_MAX = int(MAX_SCHEDULE_AHEAD.total_seconds())


def up_to(n: int) -> str:
    """A regular expression for the whole numbers 1 to ``n`` written without leading zeros."""
    digits = str(n)
    options = ["[1-9]" + "[0-9]" * (k - 1) for k in range(1, len(digits))]
    for i, digit in enumerate(digits):
        low = 1 if i == 0 else 0
        if int(digit) > low:
            rest = "[0-9]" * (len(digits) - i - 1)
            options.append(f"{digits[:i]}[{low}-{int(digit) - 1}]{rest}")
    return "|".join([*options, digits])


# The durations a `delay` may be (1 s to 30 d) as the API's schema states them: what it
# allows the server takes (the server also takes leading zeros, which it does not list).
DELAY_PATTERN = (
    "^(custom|"
    + "|".join(
        f"({up_to(DELAY_MAX // seconds)}){unit}"
        for unit, seconds in (("s?", 1), ("m", 60), ("h", 3600), ("d", 86400))
    )
    + ")$"
)


def delay_error(delay: str) -> str | None:
    """What is wrong with a `delay` value (a preset, `custom`, or any duration from 1 s
    to 30 d), or None."""
    if delay == Delay.CUSTOM:
        return None
    seconds = parse_duration(delay)
    if seconds is None:
        return f"must be custom or a duration ({DURATION_SYNTAX}), such as the presets 5s to 1h"
    if not DELAY_MIN <= seconds <= DELAY_MAX:
        return "must be a duration from 1 second to 30 days"
    return None


def schedule_errors(
    now: datetime,
    delay: str | None,
    custom_delay: int | None,
    scheduled_at: datetime | None,
) -> list[FieldError]:
    """Cross-field problems of a schedule; empty when it can be resolved."""
    errors: list[FieldError] = []
    if delay == Delay.CUSTOM and custom_delay is None and scheduled_at is None:
        errors.append(FieldError("customDelay", "is required when delay is custom"))
    if custom_delay is not None and delay != Delay.CUSTOM:
        errors.append(FieldError("customDelay", "is only allowed when delay is custom"))
    if scheduled_at is not None and scheduled_at.utcoffset() is None:
        # The JSON converter never lets one through; a library caller might.
        errors.append(FieldError("scheduledAt", "must include a time zone (or Z)"))
    elif scheduled_at is not None and scheduled_at - now > MAX_SCHEDULE_AHEAD:
        errors.append(FieldError("scheduledAt", "must be at most 30 days ahead"))
    return errors


def resolve_due_time(
    now: datetime,
    delay: str | None,
    custom_delay: int | None,
    scheduled_at: datetime | None,
) -> datetime:
    """When a notification is due: ``scheduledAt`` wins, a past one means now.

    Call only once :func:`schedule_errors` is empty.
    """
    if scheduled_at is not None:
        return max(scheduled_at, now)
    chosen = delay or DEFAULT_DELAY
    if chosen == Delay.CUSTOM:
        assert custom_delay is not None  # schedule_errors guarantees it
        return now + timedelta(seconds=custom_delay)
    seconds = parse_duration(chosen)
    assert seconds is not None  # the input's validator guarantees it
    return now + timedelta(seconds=seconds)

"""Delay presets, due-time resolution and the limits of the spec."""

from __future__ import annotations

import enum
from datetime import datetime, timedelta

from pushcore.domain.errors import FieldError


class Delay(enum.StrEnum):
    """The delay presets a notification may ask for."""

    S5 = "5s"
    S30 = "30s"
    M1 = "1m"
    M5 = "5m"
    M15 = "15m"
    M30 = "30m"
    H1 = "1h"
    CUSTOM = "custom"


PRESET_SECONDS: dict[Delay, int] = {
    Delay.S5: 5,
    Delay.S30: 30,
    Delay.M1: 60,
    Delay.M5: 300,
    Delay.M15: 900,
    Delay.M30: 1800,
    Delay.H1: 3600,
}

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
FREE_PLAN_DEVICES = 100
PRO_PLAN_DEVICES = 1000
# A live device neither registered again nor delivered to for this long is removed.
STALE_LIVE_DEVICE = timedelta(days=30)
KEY_NAME_MAX = 100
DEVICE_NAME_MAX = 100
DEVICE_TOKEN_MAX = 4096
MAX_BATCH = 500


def schedule_errors(
    now: datetime,
    delay: Delay | None,
    custom_delay: int | None,
    scheduled_at: datetime | None,
) -> list[FieldError]:
    """Cross-field problems of a schedule; empty when it can be resolved."""
    errors: list[FieldError] = []
    if delay is Delay.CUSTOM and custom_delay is None and scheduled_at is None:
        errors.append(FieldError("customDelay", "is required when delay is custom"))
    if custom_delay is not None and delay is not Delay.CUSTOM:
        errors.append(FieldError("customDelay", "is only allowed when delay is custom"))
    if scheduled_at is not None and scheduled_at.utcoffset() is None:
        # The JSON converter never lets one through; a library caller might.
        errors.append(FieldError("scheduledAt", "must include a time zone (or Z)"))
    elif scheduled_at is not None and scheduled_at - now > MAX_SCHEDULE_AHEAD:
        errors.append(FieldError("scheduledAt", "must be at most 30 days ahead"))
    return errors


def resolve_due_time(
    now: datetime,
    delay: Delay | None,
    custom_delay: int | None,
    scheduled_at: datetime | None,
) -> datetime:
    """When a notification is due: ``scheduledAt`` wins, a past one means now.

    Call only once :func:`schedule_errors` is empty.
    """
    if scheduled_at is not None:
        return max(scheduled_at, now)
    chosen = delay or DEFAULT_DELAY
    if chosen is Delay.CUSTOM:
        assert custom_delay is not None  # schedule_errors guarantees it
        return now + timedelta(seconds=custom_delay)
    return now + timedelta(seconds=PRESET_SECONDS[chosen])

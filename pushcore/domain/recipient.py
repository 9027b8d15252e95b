"""The recipient's settings and what they decide for one push (API.md, "The recipient's time").

A person owns their zone, quiet hours, snooze and mutes; every device
delivery to them, their own notifications and every stream send they follow,
is screened once when it falls due:

- a stream send while its subscription is muted reaches no device (the
  delivery ends CANCELLED, ``muted``), unless it is critical and the
  subscription lets critical through;
- a subscription that does not let critical through makes a critical send high;
- before ``snoozeUntil``, or inside quiet hours in ``hold`` mode, a priority not
  in ``bypass`` waits until the end (HELD); in ``silent`` mode it goes now, quietly;
- anything else goes out as usual.

Pure: the caller passes the instant; quiet.py holds the windows' own rule.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from datetime import datetime, time
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

import attrs

from pushcore.domain.localtime import DEFAULT_ZONE
from pushcore.domain.model import Platform, Priority
from pushcore.domain.quiet import DAYS, QuietHours, QuietMode

# The platforms quiet hours and mutes govern; a live channel is the open app itself.
SCREENED = frozenset({Platform.IOS, Platform.ANDROID, Platform.WEB, Platform.WEBHOOK})
BYPASSABLE = (Priority.HIGH, Priority.CRITICAL)
MUTED = "muted"
_CLOCK_TIME = re.compile(r"([01][0-9]|2[0-3]):([0-5][0-9])")


@attrs.frozen
class RecipientSettings:
    """An account's zone, quiet hours and snooze (the defaults: UTC, none, none)."""

    time_zone: str = DEFAULT_ZONE
    quiet_hours: QuietHours | None = None
    snooze_until: datetime | None = None

    @property
    def zone(self) -> ZoneInfo:
        """The zone as ``zoneinfo`` reads it (checked when the setting was made)."""
        return ZoneInfo(self.time_zone)

    def quiet_until(self, at: datetime) -> datetime | None:
        """When the quiet (quiet hours or snooze) ``at`` falls in ends, or None."""
        ends: list[datetime] = []
        if self.snooze_until is not None and at < self.snooze_until:
            ends.append(self.snooze_until)
        if self.quiet_hours is not None:
            end = self.quiet_hours.quiet_until(at, self.zone)
            if end is not None:
                ends.append(end)
        return max(ends, default=None)

    def bypassed_by(self, priority: Priority) -> bool:
        """Whether ``priority`` goes through quiet hours and snooze as usual."""
        bypass = (
            self.quiet_hours.bypass if self.quiet_hours is not None else frozenset(BYPASS_DEFAULT)
        )
        return priority in bypass

    def is_quiet(self, at: datetime, priority: Priority) -> bool:
        """Whether a push of ``priority`` at ``at`` is inside quiet (the live event says so)."""
        return not self.bypassed_by(priority) and self.quiet_until(at) is not None


BYPASS_DEFAULT = (Priority.CRITICAL,)


@attrs.frozen
class Mute:
    """A subscription's mute: until when, and whether critical sends still get through."""

    muted_until: datetime | None = None
    allow_critical: bool = True


@attrs.frozen
class Send:
    """Goes out now; ``quiet`` asks each gateway for its quiet form."""

    quiet: bool = False


@attrs.frozen
class Hold:
    """Waits (HELD) until ``until``."""

    until: datetime


@attrs.frozen
class Muted:
    """Reaches no device: the subscription is muted."""


Decision = Send | Hold | Muted


def decide(
    settings: RecipientSettings, mute: Mute | None, priority: Priority, at: datetime
) -> Decision:
    """What one device delivery of ``priority`` falling due at ``at`` does; ``mute`` is
    the subscription of a stream send (None for the account's own notifications)."""
    if mute is not None and priority is Priority.CRITICAL and not mute.allow_critical:
        priority = Priority.HIGH
    muted = mute is not None and mute.muted_until is not None and at < mute.muted_until
    if muted and not (priority is Priority.CRITICAL and mute is not None and mute.allow_critical):
        return Muted()
    if settings.bypassed_by(priority):
        return Send()
    if settings.snooze_until is not None and at < settings.snooze_until:
        # Held whatever the mode; quiet hours still running then hold it again.
        return Hold(settings.snooze_until)
    hours = settings.quiet_hours
    end = None if hours is None else hours.quiet_until(at, settings.zone)
    if hours is None or end is None:
        return Send()
    return Send(quiet=True) if hours.mode is QuietMode.SILENT else Hold(end)


# -- the settings as JSON (PATCH /api/account) ------------------------------------


def parse_zone(value: Any) -> str:
    """An IANA zone name; an offset or an unknown name is refused."""
    if not isinstance(value, str) or not value or value not in _zones():
        raise ValueError("must be an IANA time zone name (Europe/Berlin)")
    try:
        ZoneInfo(value)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError("must be an IANA time zone name (Europe/Berlin)") from None
    return value


@functools.cache
def _zones() -> frozenset[str]:
    return frozenset(zone_names())


@functools.cache
def zone_names() -> list[str]:
    """Every IANA zone name this system knows, sorted."""
    return sorted(available_timezones() | {DEFAULT_ZONE})


def parse_clock(value: Any) -> time:
    """``HH:MM`` on a 24-hour clock."""
    match = _CLOCK_TIME.fullmatch(value) if isinstance(value, str) else None
    if match is None:
        raise ValueError("must be a time HH:MM (00:00 to 23:59)")
    return time(int(match[1]), int(match[2]))


def parse_quiet_hours(value: Any) -> QuietHours | None:
    """``null`` or ``{start, end, days?, mode?, bypass?}``; raises ValueError naming the
    part (``start: must be ...``)."""
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise ValueError("must be an object {start, end, days, mode, bypass} or null")
    unknown = sorted(set(value) - {"start", "end", "days", "mode", "bypass"})
    if unknown:
        raise ValueError(f"{unknown[0]}: is not a known field")
    for required in ("start", "end"):
        if required not in value:
            raise ValueError(f"{required}: is required")
    start, end = (
        _part("start", parse_clock, value["start"]),
        _part("end", parse_clock, value["end"]),
    )
    if start == end:
        raise ValueError("end: must differ from start")
    days = _part("days", _days, value.get("days", list(DAYS)))
    mode = _part("mode", _mode, value.get("mode", QuietMode.HOLD.value))
    bypass = _part("bypass", _bypass, value.get("bypass", [p.value for p in BYPASS_DEFAULT]))
    return QuietHours(start, end, days, mode, bypass)


def _part(name: str, parse: Any, raw: Any) -> Any:
    try:
        return parse(raw)
    except ValueError as exc:
        raise ValueError(f"{name}: {exc}") from None


def _days(value: Any) -> frozenset[int]:
    if not isinstance(value, list) or not value or not all(d in DAYS for d in value):
        raise ValueError(f"must be a non-empty list of {', '.join(DAYS)}")
    return frozenset(DAYS.index(d) for d in value)


def _mode(value: Any) -> QuietMode:
    if value not in {m.value for m in QuietMode}:
        raise ValueError("must be hold or silent")
    return QuietMode(value)


def _bypass(value: Any) -> frozenset[Priority]:
    if not isinstance(value, list) or not all(p in {b.value for b in BYPASSABLE} for p in value):
        raise ValueError("must be a list of high, critical")
    return frozenset(Priority(p) for p in value)


def quiet_hours_json(hours: QuietHours | None) -> dict[str, Any] | None:
    """The API's (and the stored) form of quiet hours: days and bypass in a fixed order."""
    if hours is None:
        return None
    return {
        "start": hours.start.strftime("%H:%M"),
        "end": hours.end.strftime("%H:%M"),
        "days": [d for i, d in enumerate(DAYS) if i in hours.days],
        "mode": hours.mode.value,
        "bypass": [p.value for p in BYPASSABLE if p in hours.bypass],
    }


def superseded(held: Sequence[tuple[str, str, str | None, datetime]]) -> set[str]:
    """Which of the held deliveries ``(delivery, device, collapse key, due)`` a newer one
    of the same device and key replaces: only the newest per key goes out (the latest
    due, then the greatest id)."""
    newest: dict[tuple[str, str], tuple[datetime, str]] = {}
    for delivery, device, key, due in held:
        if key is None:
            continue
        found = newest.get((device, key))
        if found is None or (due, delivery) > found:
            newest[(device, key)] = (due, delivery)
    return {
        delivery
        for delivery, device, key, _ in held
        if key is not None and newest[(device, key)][1] != delivery
    }


@attrs.frozen
class SettingsPatch:
    """A PATCH of the settings: the ``given`` ones (field names) replace the current."""

    given: frozenset[str]
    time_zone: str = DEFAULT_ZONE
    quiet_hours: QuietHours | None = None
    snooze_until: datetime | None = None

    def applied(self, current: RecipientSettings) -> RecipientSettings:
        """``current`` with the given settings replaced whole."""
        return attrs.evolve(current, **{name: getattr(self, name) for name in self.given})

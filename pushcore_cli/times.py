"""``pushctl send --at``: an ISO 8601 time with an offset, a local date-time, or ``HH:MM``.

A time without an offset is a time on this machine's clock (the zone the
operating system says, with its daylight saving on that date): the command
says how it read it, since the server only ever sees instants.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta

import typer

_CLOCK = re.compile(r"([01]?[0-9]|2[0-3]):([0-5][0-9])(?::([0-5][0-9]))?")
HELP = (
    "an ISO 8601 time with an offset (2026-12-24T09:00:00Z), a local date and time"
    " (2026-12-24T09:00 or '2026-12-24 09:00', on this machine's clock) or HH:MM"
    " (the next such time here)"
)


def resolve_at(text: str, now: datetime) -> tuple[datetime, bool]:
    """``--at`` as an aware time, and whether it was read on the local clock.

    ``now`` is aware; a local time takes the machine's zone for its own date.
    A usage error when ``text`` is none of the three forms.
    """
    text = text.strip()
    clock = _CLOCK.fullmatch(text)
    if clock is not None:
        hour, minute, second = (int(part or 0) for part in clock.groups())
        today = now.astimezone().replace(tzinfo=None)
        wall = today.replace(hour=hour, minute=minute, second=second, microsecond=0)
        at = wall.astimezone()
        if at <= now:
            at = (wall + timedelta(days=1)).astimezone()
        return at, True
    try:
        parsed = datetime.fromisoformat(text.replace("z", "Z"))
    except ValueError:
        raise typer.BadParameter(
            f"{text!r} is not a time (use {HELP})", param_hint="'--at'"
        ) from None
    if parsed.utcoffset() is not None:
        return parsed, False
    return parsed.astimezone(), True


def said(text: str, at: datetime) -> str:
    """How a local ``--at`` was read, for the output."""
    local = at.astimezone()
    zone = local.tzname() or ""
    offset = local.strftime("%z")
    return (
        f"--at {text.strip()} read as {local:%Y-%m-%d %H:%M:%S} on this machine's clock"
        f" ({zone}, UTC{offset[:3]}:{offset[3:]})"
    )

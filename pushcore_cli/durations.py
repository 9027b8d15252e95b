"""Durations on the command line: ``30s``, ``15m``, ``1h``, ``7d`` or a number of seconds."""

from __future__ import annotations

import re
from datetime import timedelta

import typer

_SECONDS_PER_UNIT = {"s": 1, "m": 60, "h": 3600, "d": 86400}
# Bounded digits: Python refuses to parse very long integers, and no duration
# the service accepts needs more than a handful of them.
_DURATION = re.compile(r"([0-9]{1,12})([smhd]?)")
HELP = "30s, 15m, 1h, 7d or a number of seconds"


def parse_duration(text: str) -> timedelta:
    """``text`` as a timedelta; a usage error (exit 2) when it is not a duration."""
    match = _DURATION.fullmatch(text.strip())
    if match is None:
        raise typer.BadParameter(f"{text!r} is not a duration (use {HELP})")
    number, unit = match.groups()
    try:
        return timedelta(seconds=int(number) * _SECONDS_PER_UNIT[unit or "s"])
    except OverflowError:
        raise typer.BadParameter(f"{text!r} is too long a duration") from None


def duration_parser(value: str | timedelta) -> timedelta:
    """The Typer ``parser`` for duration options."""
    # Typer also passes an option's default through its parser.
    if isinstance(value, timedelta):
        return value
    return parse_duration(value)

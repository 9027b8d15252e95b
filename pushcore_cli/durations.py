"""Durations on the command line: ``30s``, ``15m``, ``1h``, ``7d`` or a number of seconds."""

from __future__ import annotations

from datetime import timedelta

import typer

from pushcore.domain.scheduling import DURATION_SYNTAX
from pushcore.domain.scheduling import parse_duration as domain_duration

HELP = DURATION_SYNTAX


def parse_duration(text: str) -> timedelta:
    """``text`` as a timedelta; a usage error (exit 2) when it is not a duration."""
    seconds = domain_duration(text.strip())
    if seconds is None:
        raise typer.BadParameter(f"{text!r} is not a duration (use {HELP})")
    try:
        return timedelta(seconds=seconds)
    except OverflowError:
        raise typer.BadParameter(f"{text!r} is too long a duration") from None


def duration_parser(value: str | timedelta) -> timedelta:
    """The Typer ``parser`` for duration options."""
    # Typer also passes an option's default through its parser.
    if isinstance(value, timedelta):
        return value
    return parse_duration(value)

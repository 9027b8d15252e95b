"""Durations: 30s, 15m, 1h, 7d or a number of seconds; anything else is a usage error."""

from __future__ import annotations

from datetime import timedelta

import pytest
import typer

from pushcore_cli.durations import duration_parser, parse_duration


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("30s", timedelta(seconds=30)),
        ("15m", timedelta(minutes=15)),
        ("1h", timedelta(hours=1)),
        ("7d", timedelta(days=7)),
        ("90", timedelta(seconds=90)),
        ("0", timedelta(0)),
        (" 2h ", timedelta(hours=2)),
    ],
)
def test_parses_durations(text: str, expected: timedelta) -> None:
    assert parse_duration(text) == expected


@pytest.mark.parametrize(
    "text", ["", "bad", "1x", "h", "-5", "1.5h", "1h30m", "1 h", "١٢", "1H", "9" * 13]
)
def test_refuses_anything_else(text: str) -> None:
    with pytest.raises(typer.BadParameter, match="not a duration"):
        parse_duration(text)


def test_refuses_a_duration_too_long_for_a_timedelta() -> None:
    with pytest.raises(typer.BadParameter, match="too long"):
        parse_duration("999999999999d")


def test_the_option_parser_passes_defaults_through() -> None:
    # Typer hands an option's default (already a timedelta) to the parser too.
    assert duration_parser(timedelta(hours=1)) == timedelta(hours=1)
    assert duration_parser("5m") == timedelta(minutes=5)

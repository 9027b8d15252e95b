"""``pushctl send --at``: an instant with an offset, a local date-time, or HH:MM (the next
such time), local ones read on this machine's clock and said so."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
import typer

from pushcore.converter import parse_timestamp
from pushcore_cli.times import resolve_at
from tests.cli.conftest import Cli

BERLIN = ZoneInfo("Europe/Berlin")


@pytest.fixture
def berlin(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """This process's local zone is Europe/Berlin for the test."""
    monkeypatch.setenv("TZ", "Europe/Berlin")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


@pytest.mark.usefixtures("berlin")
@pytest.mark.parametrize(
    ("text", "now", "expected"),
    [
        # Later today, and already past today (so tomorrow).
        ("09:00", datetime(2026, 11, 26, 7, 0, tzinfo=UTC), datetime(2026, 11, 26, 9, 0)),
        ("09:00", datetime(2026, 11, 26, 8, 0, tzinfo=UTC), datetime(2026, 11, 27, 9, 0)),
        ("23:59:30", datetime(2026, 11, 26, 6, 0, tzinfo=UTC), datetime(2026, 11, 26, 23, 59, 30)),
        # Local date-times take the offset of their own date (summer time in July).
        ("2027-07-01T09:00", datetime(2026, 11, 26, tzinfo=UTC), datetime(2027, 7, 1, 9, 0)),
        ("2026-12-24 18:30", datetime(2026, 11, 26, tzinfo=UTC), datetime(2026, 12, 24, 18, 30)),
    ],
)
def test_a_local_time_is_read_on_this_machines_clock(
    text: str, now: datetime, expected: datetime
) -> None:
    at, local = resolve_at(text, now)
    assert local
    assert at == expected.replace(tzinfo=BERLIN)


@pytest.mark.usefixtures("berlin")
def test_an_instant_with_an_offset_is_taken_as_it_is() -> None:
    at, local = resolve_at("2026-12-24T09:00:00Z", datetime(2026, 11, 26, tzinfo=UTC))
    assert not local
    assert at == datetime(2026, 12, 24, 9, tzinfo=UTC)


@pytest.mark.parametrize("text", ["tomorrow", "25:00", "9", "2026-13-01T00:00"])
def test_anything_else_is_a_usage_error(text: str) -> None:
    with pytest.raises(typer.BadParameter):
        resolve_at(text, datetime(2026, 11, 26, tzinfo=UTC))


@pytest.mark.usefixtures("berlin")
def test_send_at_a_clock_time_says_how_it_read_it(cli: Cli) -> None:
    result = cli("send hello --account bob --at 23:59 --json")

    assert result.exit_code == 0, result.output
    due = parse_timestamp(json.loads(result.stdout)["scheduledAt"]).astimezone(BERLIN)
    assert (due.hour, due.minute) == (23, 59)
    assert timedelta(0) < due - datetime.now(UTC) <= timedelta(days=1)
    assert "--at 23:59 read as " in result.stderr
    assert "23:59:00 on this machine's clock (CET, UTC+01:00)" in result.stderr or (
        "(CEST, UTC+02:00)" in result.stderr
    )


def test_send_at_a_time_it_cannot_read_is_a_usage_error(cli: Cli) -> None:
    result = cli("send hello --account bob --at tomorrow")

    assert result.exit_code == 2
    assert "is not a time" in " ".join(result.stderr.replace("│", " ").split())


def test_send_at_too_far_ahead_is_refused_naming_at(cli: Cli) -> None:
    result = cli("send hello --account bob --at 2099-01-01T00:00:00Z")

    assert result.exit_code == 1
    assert "--at: must be at most 30 days ahead" in result.stderr

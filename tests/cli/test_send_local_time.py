"""``pushctl send --local-time HH:MM [--date]`` (the API's ``deliverAt``): at that time of
day on the recipient's clock, and ``notifications edit`` moving it."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

from pushcore.converter import parse_timestamp
from tests.cli.conftest import Cli


def later_day(days: int = 10) -> str:
    """A day ``days`` ahead (UTC), as --date takes it."""
    return (datetime.now(UTC) + timedelta(days=days)).date().isoformat()


def test_send_at_a_local_time_is_due_on_the_recipients_clock(cli: Cli) -> None:
    assert cli("account set --account bob --time-zone Asia/Tokyo").exit_code == 0
    day = later_day()
    result = cli(f"send hello --account bob --local-time 09:00 --date {day} --json")
    assert result.exit_code == 0, result.output
    created = json.loads(result.stdout)
    # 09:00 in Tokyo (UTC+9, no daylight saving) is 00:00 UTC that day.
    assert parse_timestamp(created["scheduledAt"]) == datetime.fromisoformat(f"{day}T00:00Z")
    shown = cli(f"notifications show {created['id']} --account bob")
    assert f"09:00 on {day}, each recipient's clock" in shown.stdout

    edited = cli(f"notifications edit {created['id']} --account bob --local-time 10:30 --json")
    assert edited.exit_code == 0, edited.output
    moved = parse_timestamp(json.loads(edited.stdout)["scheduledAt"])
    assert (moved.hour, moved.minute) == (1, 30)  # the next 10:30 in Tokyo, no date now
    assert json.loads(edited.stdout)["deliverAt"] == {"localTime": "10:30", "date": None}


def test_local_time_options_that_do_not_fit_are_refused(cli: Cli) -> None:
    alone = cli(f"send hello --account bob --date {later_day()}")
    assert alone.exit_code == 2
    assert "--date needs --local-time" in " ".join(alone.stderr.replace("│", " ").split())
    both = cli("send hello --account bob --local-time 09:00 --delay 5m")
    assert both.exit_code == 2
    assert "not both" in both.stderr
    bad = cli("send hello --account bob --local-time 9am")
    assert bad.exit_code == 1
    assert "--local-time: must be a time of day as HH:MM" in bad.stderr
    far = cli(f"send hello --account bob --local-time 09:00 --date {later_day(40)}")
    assert far.exit_code == 1
    assert "--date: must be at most 30 days ahead" in far.stderr

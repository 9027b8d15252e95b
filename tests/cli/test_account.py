"""pushctl account show|set: the signed-in account's time zone, quiet hours and snooze."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

from pushcore.converter import parse_timestamp
from tests.cli.conftest import Cli

EVERY_DAY = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"]


def shown(cli: Cli) -> dict[str, Any]:
    """`account show --json` of alice."""
    result = cli("account show --account alice --json")
    assert result.exit_code == 0, result.output
    found: dict[str, Any] = json.loads(result.stdout)
    return found


def test_set_then_show_the_settings_and_turn_them_off(cli: Cli) -> None:
    assert (shown(cli)["timeZone"], shown(cli)["quietHours"]) == ("UTC", None)
    now = datetime.now(UTC)
    before = now.replace(microsecond=now.microsecond // 1000 * 1000)  # stored to the ms
    result = cli(
        "account set --account alice --time-zone Europe/Berlin --quiet-hours 22:00-07:00"
        " --mode silent --days sat,sun --snooze 1h"
    )
    assert result.exit_code == 0, result.output
    assert "22:00-07:00 sat,sun, silent, bypass critical" in result.stdout
    found = shown(cli)
    assert found["timeZone"] == "Europe/Berlin"
    assert found["quietHours"] == {
        "start": "22:00",
        "end": "07:00",
        "days": ["sat", "sun"],
        "mode": "silent",
        "bypass": ["critical"],
    }
    snooze = parse_timestamp(found["snoozeUntil"])
    assert before + timedelta(hours=1) <= snooze <= datetime.now(UTC) + timedelta(hours=1)

    assert cli("account set --account alice --quiet-hours 23:00-06:00").exit_code == 0
    assert shown(cli)["quietHours"]["days"] == EVERY_DAY  # replaced whole
    assert cli("account set --account alice --quiet-hours off --snooze off").exit_code == 0
    found = shown(cli)
    assert (found["quietHours"], found["snoozeUntil"], found["timeZone"]) == (
        None,
        None,
        "Europe/Berlin",
    )


def test_bad_values_name_their_options_and_change_nothing(cli: Cli) -> None:
    result = cli("account set --account alice --time-zone +02:00 --quiet-hours 25:00-07:00")
    assert result.exit_code != 0
    assert "--time-zone" in result.stderr
    assert "--quiet-hours" in result.stderr
    assert shown(cli)["timeZone"] == "UTC"
    assert cli("account set --account alice --quiet-hours 22:00").exit_code == 2
    assert cli("account set --account alice --snooze soon").exit_code == 2
    assert cli("account set --account alice --mode silent").exit_code == 2
    assert cli("account set --account alice").exit_code == 2

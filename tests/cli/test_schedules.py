"""pushctl schedules: create (the template's options as send has them), list, show,
preview, pause, resume, trigger, delete; in process and against a real server."""

from __future__ import annotations

import json
from typing import Any

from tests.cli.conftest import Cli
from tests.cli.test_remote import new_key, ok_json, remote, server
from tests.e2e.server import Server

__all__ = ["server"]  # the module's server of test_remote, shared


def ok(result: Any) -> Any:
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_schedule_commands_in_process(cli: Cli) -> None:
    created = ok(
        cli(
            'schedules create "Stand-up" --account alice --rrule FREQ=DAILY --tz Europe/Berlin'
            " --start 2030-03-30T02:30:00 --priority high --body agenda --metadata room=4"
            " --catch-up all --window 600 --exdate 2030-04-02T02:30:00 --json"
        )
    )
    assert created["template"] == {
        "title": "Stand-up",
        "body": "agenda",
        "priority": "high",
        "metadata": {"room": "4"},
    }
    assert (created["name"], created["catchUp"]) == ("Stand-up", {"mode": "all", "window": 600})
    assert created["exdates"] == ["2030-04-02T02:30:00"]
    sid = created["id"]
    preview = ok(
        cli(f"schedules preview {sid} --account alice --from 2030-03-31T00:00:00Z --limit 1 --json")
    )
    assert preview == [
        {"at": "2030-03-31T01:30:00.000Z", "localTime": "2030-03-31T02:30:00", "shifted": True}
    ]
    table = cli(f"schedules preview {sid} --account alice --from 2030-03-31T00:00:00Z --limit 2")
    assert "yes" in table.stdout
    shown = cli(f"schedules show {sid} --account alice")
    assert "FREQ=DAILY" in shown.stdout
    assert "Europe/Berlin" in shown.stdout
    listed = ok(cli("schedules list --account alice --json"))
    assert [s["id"] for s in listed] == [sid]
    assert ok(cli(f"schedules pause {sid} --account alice --json"))["state"] == "PAUSED"
    assert ok(cli("schedules list --account alice --state ACTIVE --json")) == []
    assert ok(cli(f"schedules resume {sid} --account alice --json"))["state"] == "ACTIVE"
    assert ok(cli(f"schedules trigger {sid} --account alice --json"))["sent"] == 1
    deleted = cli(f"schedules delete {sid} --account alice")
    assert deleted.exit_code == 0
    assert f"Deleted schedule {sid}" in deleted.output


def test_a_bad_rule_names_its_option(cli: Cli) -> None:
    result = cli('schedules create "x" --account alice --rrule FREQ=SECONDLY')
    assert result.exit_code != 0
    assert "--rrule" in result.output
    bad_zone = cli('schedules create "x" --account alice --rrule FREQ=DAILY --tz +02:00')
    assert "--tz" in bad_zone.output
    missing = cli('schedules create "x" --account alice')
    assert missing.exit_code == 2
    assert "--rrule" in missing.output


def test_schedules_on_a_server(server: Server) -> None:
    key = new_key(server, "carol")
    created = ok_json(
        remote(
            server,
            'schedules create "Digest" --rrule FREQ=WEEKLY;BYDAY=MO --tz America/New_York --json',
            api_key=key,
        )
    )
    listed = ok_json(remote(server, "schedules list --json", api_key=key))
    assert [s["id"] for s in listed] == [created["id"]]
    assert (
        ok_json(remote(server, f"schedules trigger {created['id']} --json", api_key=key))["sent"]
        == 1
    )

"""pushctl webhooks add|list|remove|rotate|test|attempts and pushctl events."""

from __future__ import annotations

import json
import re

from tests.cli.conftest import Cli

URL = "https://93.184.215.14/hook"


def test_an_endpoint_is_added_tested_listed_rotated_and_removed(cli: Cli) -> None:
    added = cli(
        f"webhooks add {URL} --event delivery.* --event notification.failed --account alice --json"
    )
    assert added.exit_code == 0, added.output
    made = json.loads(added.stdout)
    assert re.fullmatch(r"whsec_[A-Za-z0-9+/]{32}", made["secret"])
    assert made["events"] == ["delivery.*", "notification.failed"]
    assert "will not be shown again" in added.stderr
    listed = cli("webhooks list --account alice")
    assert made["id"] in listed.stdout
    assert made["secret"] not in listed.stdout
    tested = cli(f"webhooks test {made['id']} --account alice --json")
    event_id = json.loads(tested.stdout)["eventId"]
    attempts = json.loads(cli(f"webhooks attempts {made['id']} --account alice --json").stdout)
    assert [(a["eventId"], a["status"]) for a in attempts] == [(event_id, "pending")]
    events = cli("events --account alice --json")
    assert [json.loads(line)["id"] for line in events.stdout.splitlines()] == [event_id]
    assert event_id in cli("events --account alice --type webhook.test").stdout
    assert cli("events --account alice --type notification.failed").stdout == ""
    rotated = cli(f"webhooks rotate {made['id']} --account alice --json")
    assert json.loads(rotated.stdout)["secret"] != made["secret"]
    removed = cli(f"webhooks remove {made['id']} --account alice")
    assert removed.exit_code == 0
    assert "No webhook endpoints" in cli("webhooks list --account alice").stderr


def test_a_refused_url_names_the_argument(cli: Cli) -> None:
    refused = cli("webhooks add http://127.0.0.1:9/h --account alice")
    assert refused.exit_code != 0
    assert "URL" in refused.output
    assert "private, loopback or link-local" in refused.output

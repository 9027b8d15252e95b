"""pushctl devices: add (idempotent upsert), list, remove; validated like the HTTP API."""

from __future__ import annotations

import json
from typing import Any

import pytest

from pushcore.converter import device_json
from tests.cli.conftest import Cli, OpenServices

IOS_TOKEN = "a1b2" * 16
ADD = f"devices add --account alice --platform ios --token {IOS_TOKEN}"


def add_device(cli: Cli, command: str = ADD) -> dict[str, Any]:
    """Register a device with --json and return it."""
    result = cli(f"{command} --json")
    assert result.exit_code == 0, result.output
    body: dict[str, Any] = json.loads(result.stdout)
    return body


def list_devices(cli: Cli, account: str = "alice") -> list[dict[str, Any]]:
    """The account's devices as JSON."""
    result = cli(f"devices list --account {account} --json")
    assert result.exit_code == 0, result.output
    devices: list[dict[str, Any]] = json.loads(result.stdout)
    return devices


def test_add_list_remove_round_trip(cli: Cli) -> None:
    added = cli(f"{ADD} --name 'my phone'")
    assert added.exit_code == 0, added.output
    assert "Registered device dev_" in added.stderr
    assert "my phone" in added.stdout

    [device] = list_devices(cli)
    assert device["name"] == "my phone"
    assert device["platform"] == "ios"
    assert device["tokenPrefix"] == IOS_TOKEN[:8]
    assert device["isActive"] is True
    assert device["id"] in cli("devices list --account alice").stdout

    removed = cli("devices remove --account alice", device["id"])
    assert removed.exit_code == 0, removed.output
    assert device["id"] in removed.stderr
    assert list_devices(cli) == []


def test_add_json_is_the_http_device(cli: Cli, open_services: OpenServices) -> None:
    body = add_device(cli, "devices add --account alice --platform android --token fcm-token-1")

    [stored] = open_services().devices.list("alice")
    assert body == device_json(stored)


def test_the_full_token_is_never_printed(cli: Cli) -> None:
    for command in (ADD, f"{ADD} --json", "devices list --account alice"):
        result = cli(command)
        assert result.exit_code == 0, result.output
        assert IOS_TOKEN not in result.output
        assert IOS_TOKEN[:8] in result.stdout


def test_adding_the_same_token_again_refreshes_it(cli: Cli) -> None:
    first = add_device(cli, f"{ADD} --name old")

    again = cli(f"{ADD} --name new")

    assert again.exit_code == 0, again.output
    assert "already registered, refreshed" in again.stderr
    [device] = list_devices(cli)
    assert device["id"] == first["id"]
    assert device["name"] == "new"


def test_removed_device_registers_anew(cli: Cli) -> None:
    first = add_device(cli)
    cli("devices remove --account alice", first["id"])

    again = cli(ADD)

    assert "Registered device" in again.stderr
    assert list_devices(cli)[0]["id"] != first["id"]


def test_devices_belong_to_their_account(cli: Cli) -> None:
    device = add_device(cli)

    assert list_devices(cli, "bob") == []
    result = cli("devices remove --account bob", device["id"])
    assert result.exit_code == 1
    assert len(list_devices(cli)) == 1


def test_removing_an_unknown_device_is_refused(cli: Cli) -> None:
    result = cli("devices remove --account alice dev_01JD0000000000000000000000")

    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr == "error: Device not found\n"


def test_an_ios_token_that_is_not_hex_is_refused(cli: Cli) -> None:
    result = cli("devices add --account alice --platform ios --token not-a-hex-token")

    assert result.exit_code == 1
    assert result.stdout == ""
    assert "  --token: must be an APNs device token in hex" in result.stderr.splitlines()
    assert list_devices(cli) == []


def test_a_web_device_needs_valid_keys(cli: Cli) -> None:
    result = cli(
        "devices add --account alice --platform web --token https://push.example.com/x"
        " --p256dh nope --auth nope"
    )

    assert result.exit_code == 1
    fields = {line.split(":")[0].strip() for line in result.stderr.splitlines()[1:]}
    assert fields == {"--p256dh", "--auth"}


def test_a_webhook_on_a_loopback_address_is_refused(cli: Cli) -> None:
    result = cli("devices add --account alice --platform webhook --token http://127.0.0.1:9/hook")

    assert result.exit_code == 1
    assert "  --token: " in result.stderr


@pytest.mark.parametrize(
    "command",
    [
        "devices add --account alice --platform pager --token x",
        "devices add --account alice --platform ios",
        "devices add --account alice --token x",
        "devices add --account alice --platform web --token https://e.example/x --p256dh k",
        "devices remove --account alice",
    ],
    ids=["unknown platform", "no token", "no platform", "p256dh without auth", "no device id"],
)
def test_usage_errors_exit_2(cli: Cli, command: str) -> None:
    result = cli(command)

    assert result.exit_code == 2
    assert result.stdout == ""

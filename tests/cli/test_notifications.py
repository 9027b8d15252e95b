"""pushctl send and pushctl notifications list|show|cancel|stats; validated like the HTTP API."""

from __future__ import annotations

import asyncio
import json
import re
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import attrs
import pytest
from starlette.testclient import TestClient

from pushcore import Services
from pushcore.converter import format_timestamp, parse_timestamp
from pushcore.delivery import DeliveryEngine
from pushcore.domain.model import Platform
from pushcore.domain.outcomes import Failed
from pushcore_http import create_app
from tests.cli.conftest import Cli, OpenServices
from tests.fakes.gateway import ScriptedGateway
from tests.support_counts import delivery_counts

SLACK = timedelta(seconds=3)  # a slow machine between "before" and the command's clock


def ok(cli: Cli, command: str, *extra: str) -> Any:
    """Run a command with ``extra`` arguments and --json; expect exit 0 and return its JSON."""
    result = cli(command, *extra, "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def add_device(cli: Cli, token: str, account: str = "bob") -> dict[str, Any]:
    """Register an android device (no network needed) and return it."""
    device: dict[str, Any] = ok(
        cli, f"devices add --account {account} --platform android --token {token}"
    )
    return device


def send(cli: Cli, options: str = "", title: str = "hello") -> dict[str, Any]:
    """``pushctl send TITLE --account bob OPTIONS --json``: the creation response."""
    created: dict[str, Any] = ok(cli, f"send --account bob {options}", title)
    return created


def show(cli: Cli, notification_id: str, account: str = "bob") -> dict[str, Any]:
    """``pushctl notifications show ID --json``."""
    record: dict[str, Any] = ok(cli, f"notifications show --account {account}", notification_id)
    return record


def field_lines(stderr: str) -> set[str]:
    """The field names of an error's ``  <field>: <message>`` lines."""
    return {line.split(":")[0].strip() for line in stderr.splitlines() if line.startswith("  ")}


# --- send -------------------------------------------------------------------------------


def test_send_defaults_to_5s_and_counts_the_active_devices(
    cli: Cli, open_services: OpenServices
) -> None:
    add_device(cli, "phone-1")
    add_device(cli, "phone-2")
    gone = add_device(cli, "phone-3")
    add_device(cli, "someone-elses", account="carol")
    services = open_services()
    with services.store.transaction() as tx:
        [device] = [d for d in tx.devices.list("bob") if d.id == gone["id"]]
        tx.devices.update(attrs.evolve(device, is_active=False))
    before = datetime.now(UTC)

    created = send(cli)

    after = datetime.now(UTC)
    assert set(created) == {
        "id",
        "title",
        "body",
        "status",
        "scheduledAt",
        "createdAt",
        "devicesTargeted",
    }
    assert created["id"].startswith("ntf_")
    assert created["status"] == "QUEUED"
    assert created["devicesTargeted"] == 2
    scheduled = parse_timestamp(created["scheduledAt"])
    assert scheduled - parse_timestamp(created["createdAt"]) == timedelta(seconds=5)
    assert before + timedelta(seconds=5) <= scheduled + timedelta(milliseconds=1)
    assert scheduled <= after + timedelta(seconds=5)
    record = show(cli, created["id"])
    assert record["delay"] == "5s"
    assert record["customDelay"] is None
    assert record["deliveries"] == delivery_counts(2, 0, 0)


def test_send_prints_a_table_for_people(cli: Cli) -> None:
    add_device(cli, "phone-1")

    result = cli("send hello --account bob")

    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    [notification_id] = [line.split()[1] for line in lines if line.startswith("id ")]
    assert any(line.split()[:2] == ["status", "QUEUED"] for line in lines)
    assert any(line.split()[:3] == ["devices", "targeted", "1"] for line in lines)
    assert any(line.startswith("scheduled ") and line.rstrip().endswith("Z") for line in lines)
    assert f"Queued notification {notification_id}." in result.stderr


def test_send_without_devices_is_queued_for_none_with_a_warning(cli: Cli) -> None:
    result = cli("send hello --account bob --json")

    assert result.exit_code == 0, result.output
    created = json.loads(result.stdout)
    assert created["status"] == "QUEUED"
    assert created["devicesTargeted"] == 0
    assert "warning: no active device" in result.stderr


def test_at_in_the_past_means_now(cli: Cli) -> None:
    before = datetime.now(UTC)

    created = send(cli, "--at 2020-01-01T00:00:00Z")

    scheduled = parse_timestamp(created["scheduledAt"])
    assert scheduled == parse_timestamp(created["createdAt"])
    assert before - timedelta(milliseconds=1) <= scheduled <= datetime.now(UTC)


def test_at_takes_any_offset_and_normalises_to_utc(cli: Cli) -> None:
    due = (datetime.now(UTC) + timedelta(hours=2)).replace(microsecond=0)
    local = due.astimezone(timezone(timedelta(hours=2)))

    created = send(cli, f"--at {local.isoformat()}")

    assert created["scheduledAt"] == format_timestamp(due)
    assert show(cli, created["id"])["scheduledAt"] == format_timestamp(due)


def test_at_more_than_30_days_ahead_is_refused(cli: Cli) -> None:
    due = format_timestamp(datetime.now(UTC) + timedelta(days=31))

    result = cli(f"send hello --account bob --at {due}")

    assert result.exit_code == 1
    assert field_lines(result.stderr) == {"--at"}


@pytest.mark.parametrize(
    ("option", "delay", "custom", "seconds"),
    [
        ("5s", "5s", None, 5),
        ("30s", "30s", None, 30),
        ("1m", "1m", None, 60),
        ("15m", "15m", None, 900),
        ("1h", "1h", None, 3600),
        ("90s", "90s", None, 90),
        ("2m", "2m", None, 120),
        ("45", "45", None, 45),
        ("1d", "1d", None, 86400),
        ("30d", "30d", None, 30 * 86400),
    ],
)
def test_delay_is_sent_as_the_api_takes_it_one_duration_syntax(
    cli: Cli, option: str, delay: str, custom: int | None, seconds: int
) -> None:
    created = send(cli, f"--delay {option}")

    record = show(cli, created["id"])
    assert record["delay"] == delay
    assert record["customDelay"] == custom
    due = parse_timestamp(record["scheduledAt"]) - parse_timestamp(record["createdAt"])
    assert due == timedelta(seconds=seconds)


@pytest.mark.parametrize("option", ["0s", "31d"])
def test_a_delay_out_of_range_is_refused_naming_delay(cli: Cli, option: str) -> None:
    result = cli(f"send hello --account bob --delay {option}")

    assert result.exit_code == 1
    assert result.stdout == ""
    assert field_lines(result.stderr) == {"--delay"}
    assert "customDelay" not in result.stderr


@pytest.mark.parametrize("title", ["", "x" * 201], ids=["empty", "201 characters"])
def test_an_invalid_title_is_refused_naming_title(cli: Cli, title: str) -> None:
    result = cli("send --account bob", title)

    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr.startswith("error: ")
    assert "  TITLE: must be 1 to 200 characters" in result.stderr.splitlines()
    assert ok(cli, "notifications list --account bob")["items"] == []


def test_a_200_character_title_is_fine(cli: Cli) -> None:
    assert send(cli, title="x" * 200)["title"] == "x" * 200


def test_every_invalid_field_is_listed(cli: Cli) -> None:
    result = cli(
        "send --account bob --sender-icon not-a-url",
        "--sender-name",
        "n" * 51,
        "--body",
        "b" * 2001,
        "",
    )

    assert result.exit_code == 1
    assert field_lines(result.stderr) == {
        "TITLE",
        "--body",
        "--sender-name",
        "--sender-icon",
    }


def test_an_unknown_device_token_is_device_not_found(cli: Cli) -> None:
    add_device(cli, "phone-1")

    result = cli("send hello --account bob --device phone-unknown")

    assert result.exit_code == 1
    assert result.stderr == "error: --device: the account has no device phone-unknown\n"
    assert ok(cli, "notifications list --account bob")["items"] == []


def test_another_accounts_device_token_is_not_found_either(cli: Cli) -> None:
    add_device(cli, "carols-phone", account="carol")

    result = cli("send hello --account bob --device carols-phone")

    assert result.exit_code == 1
    assert "--device: the account has no device carols-phone" in result.stderr


def test_device_targets_one_device(cli: Cli) -> None:
    add_device(cli, "phone-1")
    add_device(cli, "phone-2")

    created = send(cli, "--device phone-2")

    assert created["devicesTargeted"] == 1
    assert show(cli, created["id"])["targetDeviceToken"] == "phone-2"


def test_device_takes_a_device_id(cli: Cli) -> None:
    add_device(cli, "phone-1")
    second = add_device(cli, "phone-2")

    created = send(cli, f"--device {second['id']}")

    assert created["devicesTargeted"] == 1
    assert show(cli, created["id"])["targetDeviceToken"] == "phone-2"


def test_another_accounts_device_id_is_not_found(cli: Cli) -> None:
    carols = add_device(cli, "carols-phone", account="carol")

    result = cli(f"send hello --account bob --device {carols['id']}")

    assert result.exit_code == 1
    assert result.stderr == f"error: --device: the account has no device {carols['id']}\n"
    assert ok(cli, "notifications list --account bob")["items"] == []


def test_a_bad_delay_lists_only_what_delay_takes(cli: Cli) -> None:
    result = cli("send hello --account bob --delay soon")
    help_text = cli("send --help").stdout

    assert result.exit_code == 2
    message = " ".join(result.output.replace("│", " ").split())
    assert "'--delay'" in message
    assert "5s, 30s, 1m, 5m, 15m, 30m, 1h" in message
    assert "from 1s to 30d" in message
    assert "from 1s to 30d" in " ".join(help_text.replace("│", " ").split())


def test_every_option_is_stored(cli: Cli) -> None:
    created = send(
        cli,
        "--body 'the body' --priority high --sound soft --icon-style terminal"
        " --sender-name 'CI bot'",
    )

    record = show(cli, created["id"])
    assert record["body"] == "the body"
    assert record["priority"] == "high"
    assert record["sound"] == "soft"
    assert record["iconStyle"] == "terminal"
    assert record["senderName"] == "CI bot"
    assert record["senderIcon"] is None
    assert record["stream"] is None


def test_defaults_are_stored(cli: Cli) -> None:
    record = show(cli, send(cli)["id"])

    assert record["body"] == ""
    assert record["priority"] == "normal"
    assert record["sound"] == "default"
    assert record["iconStyle"] == "bolt"
    assert record["senderName"] is None
    assert record["targetDeviceToken"] is None
    assert record["metadata"] == {}


def test_metadata_round_trips(cli: Cli) -> None:
    created = send(
        cli,
        "--metadata env=prod --metadata 'url=https://ci.example/?job=1&x=y'"
        " --metadata empty= --metadata 'note=ça va'",
    )

    assert show(cli, created["id"])["metadata"] == {
        "env": "prod",
        "url": "https://ci.example/?job=1&x=y",
        "empty": "",
        "note": "ça va",
    }


def test_metadata_over_the_limits_is_refused_naming_metadata(cli: Cli) -> None:
    pairs = [f"--metadata=k{i}=v" for i in range(51)]

    result = cli("send hello --account bob", *pairs)

    assert result.exit_code == 1
    assert field_lines(result.stderr) == {"--metadata"}


@pytest.mark.parametrize(
    "options",
    [
        "--metadata novalue",
        "--metadata a=1 --metadata a=2",
        "--delay soon",
        "--delay custom",
        "--delay 5s --at 2030-01-01T00:00:00Z",
        "--priority urgent",
        "--sound loud",
        "--icon-style star",
    ],
    ids=[
        "metadata without =",
        "metadata key twice",
        "not a duration",
        "custom is not a duration",
        "delay and at",
        "bad priority",
        "bad sound",
        "bad icon style",
    ],
)
def test_usage_errors_exit_2(cli: Cli, options: str) -> None:
    result = cli(f"send hello --account bob {options}")

    assert result.exit_code == 2
    assert result.stdout == ""


@pytest.mark.parametrize(
    "command",
    ["send --account bob", "send hello", "notifications show --account bob", "notifications list"],
)
def test_missing_arguments_exit_2(cli: Cli, command: str) -> None:
    assert cli(command).exit_code == 2


# --- notifications list -----------------------------------------------------------------


def test_paging_with_the_cursor_covers_everything_once_newest_first(cli: Cli) -> None:
    sent = [send(cli, title=f"n{i}")["id"] for i in range(5)]

    seen: list[str] = []
    pages = 0
    cursor: str | None = None
    while True:
        extra = ("--cursor", cursor) if cursor else ()
        page = ok(cli, "notifications list --account bob --limit 2", *extra)
        pages += 1
        assert len(page["items"]) <= 2
        seen += [item["id"] for item in page["items"]]
        cursor = page["nextCursor"]
        if cursor is None:
            break
        assert pages < 10

    assert pages == 3
    assert seen == list(reversed(sent))


def test_an_exact_last_page_has_no_next_cursor(cli: Cli) -> None:
    for i in range(2):
        send(cli, title=f"n{i}")

    page = ok(cli, "notifications list --account bob --limit 2")

    assert len(page["items"]) == 2
    assert page["nextCursor"] is None


def test_status_filters_the_list(cli: Cli) -> None:
    first, second, third = (send(cli, title=f"n{i}")["id"] for i in range(3))
    ok(cli, "notifications cancel --account bob", second)

    cancelled = ok(cli, "notifications list --account bob --status CANCELLED")
    queued = ok(cli, "notifications list --account bob --status queued")
    delivered = ok(cli, "notifications list --account bob --status DELIVERED")

    assert [n["id"] for n in cancelled["items"]] == [second]
    assert [n["id"] for n in queued["items"]] == [third, first]
    assert delivered == {"items": [], "nextCursor": None}


def test_the_list_holds_only_the_accounts_own(cli: Cli) -> None:
    mine = send(cli)["id"]
    ok(cli, "send theirs --account carol")

    page = ok(cli, "notifications list --account bob")

    assert [n["id"] for n in page["items"]] == [mine]


@pytest.mark.parametrize(
    ("options", "field"),
    [
        ("--status bogus", "--status"),
        ("--limit 0", "--limit"),
        ("--limit 101", "--limit"),
        ("--cursor not-a-cursor", "--cursor"),
    ],
)
def test_bad_list_options_are_refused_naming_the_field(cli: Cli, options: str, field: str) -> None:
    result = cli(f"notifications list --account bob {options}")

    assert result.exit_code == 1
    assert result.stdout == ""
    assert field_lines(result.stderr) == {field}


def test_list_table_and_the_next_page_hint(cli: Cli) -> None:
    ids = [send(cli, title=f"title-{i}")["id"] for i in range(3)]

    result = cli("notifications list --account bob --limit 2")

    assert result.exit_code == 0, result.output
    assert ids[2] in result.stdout
    assert ids[1] in result.stdout
    assert ids[0] not in result.stdout
    assert "title-2" in result.stdout
    [hint] = [line for line in result.stderr.splitlines() if line.startswith("More: ")]
    assert hint.startswith("More: pushctl notifications list --account bob --limit 2 --cursor ")
    rest = cli(hint.removeprefix("More: pushctl ") + " --json")
    assert [n["id"] for n in json.loads(rest.stdout)["items"]] == [ids[0]]


def test_an_empty_list_says_so(cli: Cli) -> None:
    result = cli("notifications list --account bob")

    assert result.exit_code == 0
    assert result.stdout == ""
    assert "No notifications" in result.stderr


# --- show, cancel, stats ----------------------------------------------------------------


def test_show_prints_the_full_record(cli: Cli) -> None:
    add_device(cli, "phone-1")
    created = send(cli, "--body 'the body' --delay 90s --metadata env=prod")

    result = cli("notifications show --account bob", created["id"])

    assert result.exit_code == 0, result.output
    for text in (created["id"], "QUEUED", "the body", "env=prod"):
        assert text in result.stdout
    assert "pending 1, delivered 0, failed 0" in result.stdout
    [asked] = [line.split() for line in result.stdout.splitlines() if line.startswith("asked ")]
    assert asked == ["asked", "delay", "90s"]


def test_show_says_an_exact_time_was_asked_not_the_default_delay(cli: Cli) -> None:
    at = (datetime.now(UTC) + timedelta(hours=3)).replace(microsecond=0)
    created = send(cli, f"--at {at.isoformat()}")

    result = cli("notifications show --account bob", created["id"])

    [asked] = [line.split() for line in result.stdout.splitlines() if line.startswith("asked ")]
    assert asked == ["asked", "at", created["scheduledAt"]]


@pytest.mark.parametrize("command", ["show", "cancel"])
def test_another_accounts_notification_is_not_found(cli: Cli, command: str) -> None:
    created = send(cli)

    result = cli(f"notifications {command} --account carol", created["id"])

    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr == "error: Notification not found\n"
    assert show(cli, created["id"])["status"] == "QUEUED"


def test_an_unknown_id_is_not_found(cli: Cli) -> None:
    result = cli("notifications show --account bob ntf_01JD0000000000000000000000")

    assert result.exit_code == 1
    assert "Notification not found" in result.stderr


def test_cancel_then_cancel_again_is_a_conflict(cli: Cli) -> None:
    add_device(cli, "phone-1")
    created = send(cli, "--delay 1h")

    cancelled = ok(cli, "notifications cancel --account bob", created["id"])
    again = cli("notifications cancel --account bob", created["id"])

    assert cancelled["id"] == created["id"]
    assert cancelled["status"] == "CANCELLED"
    assert cancelled["settledAt"] is not None
    assert cancelled["deliveries"]["pending"] == 0
    assert show(cli, created["id"])["status"] == "CANCELLED"
    assert again.exit_code == 1
    assert again.stdout == ""
    assert again.stderr == "error: Notification is CANCELLED and can no longer be cancelled\n"


def test_cancel_says_so_for_people(cli: Cli) -> None:
    created = send(cli)

    result = cli("notifications cancel --account bob", created["id"])

    assert result.exit_code == 0, result.output
    assert "CANCELLED" in result.stdout
    assert f"Cancelled notification {created['id']}." in result.stderr


def test_stats_count_sends_and_cancels(cli: Cli) -> None:
    add_device(cli, "phone-1")
    add_device(cli, "phone-2")
    ids = [send(cli, title=f"n{i}")["id"] for i in range(3)]
    ok(cli, "notifications cancel --account bob", ids[0])
    ok(cli, "send theirs --account carol")

    stats = ok(cli, "notifications stats --account bob")

    assert stats == {
        "total": 3,
        "byStatus": {"SCHEDULED": 0, "QUEUED": 2, "DELIVERED": 0, "FAILED": 0, "CANCELLED": 1},
        "deliveries": {"delivered": 0, "failed": 0, "pending": 4},
        "last24h": {"created": 3, "delivered": 0, "failed": 0},
    }


def test_stats_of_a_new_account_are_zero_and_print_as_a_table(cli: Cli) -> None:
    stats = ok(cli, "notifications stats --account nobody")
    table = cli("notifications stats --account nobody")

    assert stats["total"] == 0
    assert set(stats["byStatus"].values()) == {0}
    assert table.exit_code == 0
    assert table.stdout.split()[:2] == ["total", "0"]
    assert "last 24 hours" in table.stdout


def test_json_is_what_the_http_api_returns(cli: Cli, open_services: OpenServices) -> None:
    add_device(cli, "phone-1")
    for i in range(3):
        send(cli, f"--metadata i={i}", title=f"n{i}")
    key = ok(
        cli,
        "keys create --account bob --name t --scope notifications:read",
    )["key"]
    first = ok(cli, "notifications list --account bob --limit 2")
    notification_id = first["items"][0]["id"]

    with TestClient(create_app(open_services(), run_engine=False)) as client:
        headers = {"X-API-Key": key}
        http_first = client.get("/api/notifications?limit=2", headers=headers).json()
        http_rest = client.get(
            f"/api/notifications?limit=2&cursor={first['nextCursor']}", headers=headers
        ).json()
        http_show = client.get(f"/api/notifications/{notification_id}", headers=headers).json()
        http_stats = client.get("/api/notifications/stats", headers=headers).json()

    assert first == http_first
    assert ok(cli, "notifications list --account bob --limit 2 --cursor", first["nextCursor"]) == (
        http_rest
    )
    assert show(cli, notification_id) == http_show
    assert ok(cli, "notifications stats --account bob") == http_stats


NO_ENGINE = "warning: no delivery engine (pushctl serve or pushctl worker) has been seen"


def _beat(services: Services, ago: timedelta) -> None:
    with services.store.transaction() as tx:
        tx.engines.beat("vm:1:engine", datetime.now(UTC) - ago)


def test_send_warns_when_no_engine_works_the_database(
    cli: Cli, open_services: OpenServices
) -> None:
    # Nothing has ever worked this database: the notification would only wait.
    result = cli("send hello --account bob")
    assert result.exit_code == 0, result.output
    assert NO_ENGINE in result.stderr

    # An engine last seen 11 s ago is not working any more...
    services = open_services()
    _beat(services, timedelta(seconds=11))
    assert NO_ENGINE in cli("send hello --account bob").stderr
    # ...one that beat a moment ago (serve and worker beat every 2 s) is.
    _beat(services, timedelta(seconds=1))
    result = cli("send hello --account bob")
    assert result.exit_code == 0, result.output
    assert NO_ENGINE not in result.stderr


def test_streams_send_warns_when_no_engine_works_the_database(
    cli: Cli, open_services: OpenServices
) -> None:
    stream = json.loads(cli("streams create --account alice --name Deploys --json").stdout)
    assert NO_ENGINE in cli(f"streams send {stream['id']} --title hi --account alice").stderr
    _beat(open_services(), timedelta(seconds=0))
    assert NO_ENGINE not in cli(f"streams send {stream['id']} --title hi --account alice").stderr


def test_show_says_why_a_partly_failed_notification_missed_a_device(
    cli: Cli, open_services: OpenServices
) -> None:
    ok_device = "fcm-token-delivered"
    bad_device = "fcm-token-refused"
    for token in (ok_device, bad_device):
        assert cli(f"devices add --account bob --platform android --token {token}").exit_code == 0
    created = send(cli, "--account bob --at 2020-01-01T00:00:00Z")
    services = open_services()
    gateway = ScriptedGateway(services.clock)
    gateway.script(bad_device, Failed("InvalidRegistration"))
    engine = DeliveryEngine(services.store, services.clock, dict.fromkeys(Platform, gateway))

    async def deliver() -> None:
        await engine.tick()
        await engine.drain()

    asyncio.run(deliver())
    asyncio.run(engine.stop())

    shown = cli(f"notifications show --account bob {created['id']}")
    assert shown.exit_code == 0, shown.output
    assert re.search(r"status\s+DELIVERED", shown.stdout)
    assert re.search(r"failure reason\s+InvalidRegistration", shown.stdout)
    assert "delivered 1, failed 1" in shown.stdout

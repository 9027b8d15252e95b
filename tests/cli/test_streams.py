"""pushctl streams: create|list|delete|send|subscribe|subscriptions|unsubscribe|lookup."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
import typer
from starlette.testclient import TestClient
from typer.core import TyperGroup

from pushcore.converter import lookup_json, stream_json, subscription_json
from pushcore_cli.main import app
from pushcore_http import create_app
from tests.cli.conftest import Cli, OpenServices
from tests.support_counts import delivery_counts

CODE = re.compile(r"^[a-z]+-[a-hj-km-np-z2-9]{4}$")
PLAN_LIMIT = "error: The free plan allows 3 streams; delete one or move to the pro plan\n"
STREAM_KEYS = {"id", "name", "code", "description", "iconUrl", "subscribers", "createdAt"}
SUMMARY_KEYS = STREAM_KEYS - {"createdAt"}


def ok(cli: Cli, command: str, *extra: str) -> Any:
    """Run a command with ``extra`` arguments and --json; expect exit 0 and return its JSON."""
    result = cli(command, *extra, "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def refused(cli: Cli, command: str, *extra: str) -> str:
    """Run a command expecting exit 1 and nothing on stdout; return its stderr."""
    result = cli(command, *extra)
    assert result.exit_code == 1, result.output
    assert result.stdout == ""
    return result.stderr


def create(cli: Cli, name: str = "Deploys", account: str = "alice") -> dict[str, Any]:
    """``pushctl streams create --name NAME --json``: the created stream."""
    stream: dict[str, Any] = ok(cli, f"streams create --account {account} --name", name)
    return stream


def subscribe(cli: Cli, code: str, account: str = "bob") -> dict[str, Any]:
    """``pushctl streams subscribe CODE --json``: the subscription."""
    subscription: dict[str, Any] = ok(cli, f"streams subscribe --account {account}", code)
    return subscription


def send(cli: Cli, stream_id: str, title: str = "hello", options: str = "") -> dict[str, Any]:
    """``pushctl streams send ID --title TITLE --json`` as alice: the send result."""
    result: dict[str, Any] = ok(
        cli, f"streams send --account alice {stream_id} {options} --title", title
    )
    return result


def show(cli: Cli, notification_id: str, account: str = "alice") -> dict[str, Any]:
    """``pushctl notifications show ID --json``."""
    record: dict[str, Any] = ok(cli, f"notifications show --account {account}", notification_id)
    return record


# --- the command tree -------------------------------------------------------------------


def test_the_streams_group_has_every_command() -> None:
    root = typer.main.get_command(app)
    assert isinstance(root, TyperGroup)
    group = root.commands["streams"]
    assert isinstance(group, TyperGroup)

    assert set(group.commands) == {
        "create",
        "list",
        "delete",
        "send",
        "subscribe",
        "subscriptions",
        "unsubscribe",
        "lookup",
    }


# --- create, list, delete and the plan limit --------------------------------------------


def test_create_prints_the_stream_and_its_code(cli: Cli) -> None:
    result = cli("streams create --account alice --name Deploys --description 'main deploys'")

    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    [code] = [line.split()[1] for line in lines if line.startswith("code ")]
    assert CODE.match(code)
    assert any(line.split()[:2] == ["name", "Deploys"] for line in lines)
    assert any(line.split()[:3] == ["description", "main", "deploys"] for line in lines)
    assert any(line.split()[:2] == ["subscribers", "0"] for line in lines)
    assert f"pushctl streams subscribe {code}" in result.stderr


def test_create_json_is_the_stream_object(cli: Cli) -> None:
    stream = create(cli)

    assert set(stream) == STREAM_KEYS
    assert stream["id"].startswith("str_")
    assert CODE.match(stream["code"])
    assert stream["name"] == "Deploys"
    assert stream["description"] == ""
    assert stream["iconUrl"] is None
    assert stream["subscribers"] == 0


def test_codes_differ(cli: Cli) -> None:
    ok(cli, "accounts set-plan alice pro")

    codes = {create(cli, f"s{i}")["code"] for i in range(5)}

    assert len(codes) == 5
    assert all(CODE.match(code) for code in codes)


def test_the_fourth_stream_on_the_free_plan_is_refused_until_pro(cli: Cli) -> None:
    for i in range(3):
        create(cli, f"s{i}")

    stderr = refused(cli, "streams create --account alice --name s3")

    assert stderr == PLAN_LIMIT
    assert len(ok(cli, "streams list --account alice")) == 3
    assert ok(cli, "accounts set-plan alice pro")["plan"] == "pro"
    create(cli, "s3")
    create(cli, "s4")
    assert len(ok(cli, "streams list --account alice")) == 5


def test_the_plan_limit_is_per_account(cli: Cli) -> None:
    for i in range(3):
        create(cli, f"s{i}")

    create(cli, "theirs", account="bob")


def test_deleting_a_stream_frees_its_slot(cli: Cli) -> None:
    streams = [create(cli, f"s{i}") for i in range(3)]
    assert refused(cli, "streams create --account alice --name s3") == PLAN_LIMIT

    deleted = ok(cli, "streams delete --account alice", streams[1]["id"])

    assert deleted == {"success": True, "id": streams[1]["id"]}
    assert streams[1]["id"] not in {s["id"] for s in ok(cli, "streams list --account alice")}
    create(cli, "s3")
    assert refused(cli, "streams create --account alice --name s4") == PLAN_LIMIT


def test_list_is_newest_first_and_only_the_accounts_own(cli: Cli) -> None:
    first = create(cli, "first")
    second = create(cli, "second")
    create(cli, "theirs", account="bob")

    listed = ok(cli, "streams list --account alice")

    assert listed == [second, first]


def test_list_prints_a_table_for_people(cli: Cli) -> None:
    stream = create(cli)

    result = cli("streams list --account alice")

    assert result.exit_code == 0, result.output
    [row] = [line for line in result.stdout.splitlines() if line.startswith(stream["id"])]
    assert row.split()[1:4] == ["Deploys", stream["code"], "0"]


def test_empty_lists_say_so(cli: Cli) -> None:
    streams = cli("streams list --account alice")
    subscriptions = cli("streams subscriptions --account bob")

    assert streams.exit_code == subscriptions.exit_code == 0
    assert streams.stdout == subscriptions.stdout == ""
    assert "No streams" in streams.stderr
    assert "No subscriptions" in subscriptions.stderr
    assert ok(cli, "streams list --account alice") == []
    assert ok(cli, "streams subscriptions --account bob") == []


def test_delete_says_so_for_people(cli: Cli) -> None:
    stream = create(cli)

    result = cli("streams delete --account alice", stream["id"])

    assert result.exit_code == 0, result.output
    assert result.stdout == ""
    assert f"Deleted stream {stream['id']}" in result.stderr


@pytest.mark.parametrize(
    ("options", "field"),
    [
        ("--name ''", "--name"),
        ("--name '   '", "--name"),
        ("--name " + "n" * 51, "--name"),
        ("--name ok --description " + "d" * 201, "--description"),
        ("--name ok --icon-url not-a-url", "--icon-url"),
    ],
    ids=["empty name", "blank name", "51-character name", "long description", "bad icon url"],
)
def test_invalid_fields_are_refused_naming_the_field(cli: Cli, options: str, field: str) -> None:
    stderr = refused(cli, f"streams create --account alice {options}")

    assert stderr.startswith("error: ")
    assert {line.split(":")[0].strip() for line in stderr.splitlines()[1:]} == {field}
    assert ok(cli, "streams list --account alice") == []


def test_a_50_character_name_and_200_character_description_are_fine(cli: Cli) -> None:
    stream = ok(cli, "streams create --account alice --name", "n" * 50, "--description", "d" * 200)

    assert stream["name"] == "n" * 50
    assert stream["description"] == "d" * 200


# --- subscribe, lookup, subscriptions, unsubscribe --------------------------------------


def test_lookup_then_subscribe_then_lookup_again(cli: Cli) -> None:
    stream = create(cli)
    code = stream["code"]

    before = ok(cli, "streams lookup --account bob", code)
    subscription = subscribe(cli, code)
    after = ok(cli, "streams lookup --account bob", code)

    summary = {k: v for k, v in stream.items() if k != "createdAt"}
    assert before == {**summary, "isSubscribed": False}
    assert set(subscription) == {"id", "stream", "createdAt"}
    assert subscription["id"].startswith("sub_")
    assert subscription["stream"] == {**summary, "subscribers": 1}
    assert after == {**summary, "subscribers": 1, "isSubscribed": True}
    assert ok(cli, "streams list --account alice")[0]["subscribers"] == 1
    assert ok(cli, "streams subscriptions --account bob") == [subscription]


def test_lookup_and_subscribe_take_the_code_in_any_case(cli: Cli) -> None:
    code = create(cli)["code"]

    assert ok(cli, "streams lookup --account bob", code.upper())["code"] == code
    assert subscribe(cli, f" {code.upper()} ")["stream"]["code"] == code


def test_subscribing_twice_is_refused(cli: Cli) -> None:
    code = create(cli)["code"]
    subscribe(cli, code)

    stderr = refused(cli, "streams subscribe --account bob", code)

    assert stderr == "error: You already subscribe to this stream\n"
    assert len(ok(cli, "streams subscriptions --account bob")) == 1
    assert ok(cli, "streams lookup --account carol", code)["subscribers"] == 1


def test_the_creator_cannot_subscribe_to_their_own_stream(cli: Cli) -> None:
    code = create(cli)["code"]

    stderr = refused(cli, "streams subscribe --account alice", code)

    assert stderr == "error: You cannot subscribe to your own stream\n"
    assert ok(cli, "streams subscriptions --account alice") == []
    assert ok(cli, "streams lookup --account alice", code)["isSubscribed"] is False


@pytest.mark.parametrize("command", ["subscribe", "lookup"])
def test_an_unknown_code_is_not_found(cli: Cli, command: str) -> None:
    create(cli)

    stderr = refused(cli, f"streams {command} --account bob nobody-2222")

    assert stderr == "error: No stream has this code\n"


def test_an_empty_code_is_refused(cli: Cli) -> None:
    stderr = refused(cli, "streams subscribe --account bob", "")

    assert stderr.startswith("error: ")
    assert "  CODE: " in stderr


def test_lookup_prints_a_record_for_people(cli: Cli) -> None:
    code = create(cli)["code"]
    subscribe(cli, code)

    result = cli("streams lookup --account bob", code)

    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert any(line.split()[:2] == ["code", code] for line in lines)
    assert any(line.split()[:2] == ["subscribers", "1"] for line in lines)
    assert any(line.split()[:2] == ["subscribed", "yes"] for line in lines)


def test_subscriptions_print_a_table_for_people(cli: Cli) -> None:
    stream = create(cli)
    subscription = subscribe(cli, stream["code"])

    result = cli("streams subscriptions --account bob")

    assert result.exit_code == 0, result.output
    [row] = [line for line in result.stdout.splitlines() if line.startswith(subscription["id"])]
    assert row.split()[1:4] == ["Deploys", stream["code"], "1"]


def test_subscriptions_are_newest_first(cli: Cli) -> None:
    first = subscribe(cli, create(cli, "one")["code"])
    second = subscribe(cli, create(cli, "two", account="carol")["code"])

    listed = ok(cli, "streams subscriptions --account bob")

    assert [s["id"] for s in listed] == [second["id"], first["id"]]


def test_unsubscribe_removes_the_subscription(cli: Cli) -> None:
    code = create(cli)["code"]
    subscription = subscribe(cli, code)

    result = ok(cli, "streams unsubscribe --account bob", subscription["id"])

    assert result == {"success": True, "id": subscription["id"]}
    assert ok(cli, "streams subscriptions --account bob") == []
    found = ok(cli, "streams lookup --account bob", code)
    assert (found["subscribers"], found["isSubscribed"]) == (0, False)
    assert subscribe(cli, code)["id"] != subscription["id"]


def test_unsubscribe_twice_or_someone_elses_is_not_found(cli: Cli) -> None:
    subscription = subscribe(cli, create(cli)["code"])

    assert refused(cli, "streams unsubscribe --account carol", subscription["id"]) == (
        "error: Subscription not found\n"
    )
    ok(cli, "streams unsubscribe --account bob", subscription["id"])
    assert refused(cli, "streams unsubscribe --account bob", subscription["id"]) == (
        "error: Subscription not found\n"
    )


def test_deleting_a_stream_removes_its_subscriptions(cli: Cli) -> None:
    stream = create(cli)
    subscribe(cli, stream["code"])
    kept = subscribe(cli, create(cli, "other", account="carol")["code"])

    ok(cli, "streams delete --account alice", stream["id"])

    assert ok(cli, "streams subscriptions --account bob") == [kept]
    assert refused(cli, "streams lookup --account bob", stream["code"]) == (
        "error: No stream has this code\n"
    )


def test_deleting_the_only_subscribed_stream_leaves_no_subscriptions(cli: Cli) -> None:
    stream = create(cli)
    subscribe(cli, stream["code"])

    ok(cli, "streams delete --account alice", stream["id"])

    assert ok(cli, "streams subscriptions --account bob") == []


# --- send -------------------------------------------------------------------------------


def test_send_reaches_each_subscribers_devices_as_a_notification_of_the_creator(
    cli: Cli,
) -> None:
    stream = create(cli)
    subscribe(cli, stream["code"])
    ok(cli, "devices add --account bob --platform android --token t1")

    result = send(cli, stream["id"], options="--body 'the body' --priority high --sound soft")

    assert result["sent"] == 1
    assert result["subscribers"] == 1
    assert result["stream"] == {"name": "Deploys", "code": stream["code"]}
    assert result["notificationId"].startswith("ntf_")
    record = show(cli, result["notificationId"])
    assert record["stream"] == {"id": stream["id"], "name": "Deploys", "code": stream["code"]}
    assert record["senderName"] == "Deploys"
    assert record["senderIcon"] is None
    assert record["title"] == "hello"
    assert record["body"] == "the body"
    assert record["priority"] == "high"
    assert record["sound"] == "soft"
    assert record["status"] == "QUEUED"
    assert record["devicesTargeted"] == 1
    assert record["deliveries"] == delivery_counts(1, 0, 0)
    listed = ok(cli, "notifications list --account alice")["items"]
    assert [n["id"] for n in listed] == [result["notificationId"]]
    assert ok(cli, "notifications list --account bob")["items"] == []


def test_send_counts_every_active_device_of_every_subscriber(cli: Cli) -> None:
    stream = create(cli)
    for account in ("bob", "carol"):
        subscribe(cli, stream["code"], account=account)
    for token in ("b1", "b2"):
        ok(cli, f"devices add --account bob --platform android --token {token}")
    ok(cli, "devices add --account carol --platform android --token c1")
    ok(cli, "devices add --account alice --platform android --token a1")

    result = send(cli, stream["id"])

    assert (result["sent"], result["subscribers"]) == (3, 2)


def test_send_prints_a_record_for_people(cli: Cli) -> None:
    stream = create(cli)
    subscribe(cli, stream["code"])
    ok(cli, "devices add --account bob --platform android --token t1")

    result = cli("streams send --account alice", stream["id"], "--title", "hello")

    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    [notification_id] = [line.split()[2] for line in lines if line.startswith("notification id ")]
    assert notification_id.startswith("ntf_")
    assert any(line.split()[:2] == ["sent", "1"] for line in lines)
    assert any(line.split()[:2] == ["subscribers", "1"] for line in lines)
    assert any(line.split()[1:] == ["Deploys", f"({stream['code']})"] for line in lines)
    assert f"Queued notification {notification_id} for 1 device of 1 subscriber." in result.stderr


@pytest.mark.parametrize("by", ["code", "id"])
def test_send_takes_the_stream_by_code_or_id_and_the_title_as_an_argument(
    cli: Cli, by: str
) -> None:
    stream = create(cli)
    subscribe(cli, stream["code"])
    ok(cli, "devices add --account bob --platform android --token t1")

    sent = ok(cli, "streams send --account alice", stream[by], "v2 is out")

    assert (sent["sent"], sent["subscribers"]) == (1, 1)
    assert show(cli, sent["notificationId"])["title"] == "v2 is out"


def test_send_by_a_code_that_is_not_yours_is_refused(cli: Cli) -> None:
    theirs = create(cli, account="carol")

    stderr = refused(cli, "streams send --account alice", theirs["code"], "hi")

    assert stderr == (
        f"error: None of your streams has the code '{theirs['code']}' (pushctl streams list)\n"
    )


def test_a_title_given_twice_differently_is_a_usage_error(cli: Cli) -> None:
    stream = create(cli)

    result = cli("streams send --account alice", stream["code"], "one", "--title", "two")

    assert result.exit_code == 2
    assert "given twice" in result.stderr


def test_the_sender_name_can_be_overridden(cli: Cli) -> None:
    stream = create(cli)

    result = send(cli, stream["id"], options="--sender-name 'Release bot'")

    assert show(cli, result["notificationId"])["senderName"] == "Release bot"


def test_a_send_after_the_only_subscriber_left_fails_with_no_devices(cli: Cli) -> None:
    stream = create(cli)
    subscription = subscribe(cli, stream["code"])
    ok(cli, "devices add --account bob --platform android --token t1")
    ok(cli, "streams unsubscribe --account bob", subscription["id"])

    result = cli("streams send --account alice", stream["id"], "--title", "hello", "--json")

    assert result.exit_code == 0, result.output
    sent = json.loads(result.stdout)
    assert (sent["sent"], sent["subscribers"]) == (0, 0)
    assert "warning: " in result.stderr
    assert "no subscribers" in result.stderr
    record = show(cli, sent["notificationId"])
    assert record["status"] == "FAILED"
    assert record["failureReason"] == "no_devices"
    assert record["devicesTargeted"] == 0


def test_a_send_to_subscribers_without_devices_warns(cli: Cli) -> None:
    stream = create(cli)
    subscribe(cli, stream["code"])

    result = cli("streams send --account alice", stream["id"], "--title", "hello")

    assert result.exit_code == 0, result.output
    assert any(line.split() == ["sent", "0"] for line in result.stdout.splitlines())
    assert "warning: " in result.stderr
    assert "none of the 1 subscriber has an active device" in result.stderr


@pytest.mark.parametrize(
    ("options", "fields"),
    [
        ("--title ''", {"--title"}),
        ("--title " + "t" * 201, {"--title"}),
        ("--title ok --body " + "b" * 2001, {"--body"}),
        ("--title ok --sender-name " + "n" * 51, {"--sender-name"}),
        ("--title ok --sender-icon not-a-url", {"--sender-icon"}),
        (
            "--title '' --sender-name '' --sender-icon x",
            {"--title", "--sender-name", "--sender-icon"},
        ),
    ],
    ids=["empty title", "long title", "long body", "long sender", "bad icon", "several"],
)
def test_invalid_send_fields_are_refused_naming_them(
    cli: Cli, options: str, fields: set[str]
) -> None:
    stream = create(cli)

    stderr = refused(cli, f"streams send --account alice {stream['id']} {options}")

    assert {line.split(":")[0].strip() for line in stderr.splitlines()[1:]} == fields
    assert ok(cli, "notifications list --account alice")["items"] == []


@pytest.mark.parametrize("command", ["delete", "send"])
def test_another_account_cannot_delete_or_send_to_a_stream(cli: Cli, command: str) -> None:
    stream = create(cli)
    subscribe(cli, stream["code"])
    extra = ("--title", "spam") if command == "send" else ()

    stderr = refused(cli, f"streams {command} --account bob", stream["id"], *extra)

    assert stderr == "error: Stream not found\n"
    assert ok(cli, "streams list --account alice") == [{**stream, "subscribers": 1}]
    assert ok(cli, "notifications list --account bob")["items"] == []
    assert ok(cli, "notifications list --account alice")["items"] == []


@pytest.mark.parametrize("command", ["delete", "send"])
def test_an_unknown_stream_is_not_found(cli: Cli, command: str) -> None:
    extra = ("--title", "hi") if command == "send" else ()

    stderr = refused(
        cli, f"streams {command} --account alice str_01JD0000000000000000000000", *extra
    )

    assert stderr == "error: Stream not found\n"


@pytest.mark.parametrize(
    "command",
    [
        "streams create --account alice",
        "streams create --name x",
        "streams delete --account alice",
        "streams send --account alice str_x",
        "streams send --account alice --title x",
        "streams send --account alice str_x --title x --priority urgent",
        "streams send --account alice str_x --title x --sound loud",
        "streams subscribe --account bob",
        "streams unsubscribe --account bob",
        "streams lookup --account bob",
        "streams list",
    ],
)
def test_usage_errors_exit_2(cli: Cli, command: str) -> None:
    result = cli(command)

    assert result.exit_code == 2
    assert result.stdout == ""


# --- the JSON is the HTTP API's ---------------------------------------------------------


def test_json_is_what_the_http_api_returns(cli: Cli, open_services: OpenServices) -> None:
    stream = create(cli)
    create(cli, "Alerts")
    subscription = subscribe(cli, stream["code"])
    ok(cli, "devices add --account bob --platform android --token t1")
    key = ok(
        cli,
        "keys create --account alice --name t"
        " --scope notifications:write --scope notifications:read",
    )["key"]
    token = ok(cli, "token issue bob")["token"]
    listed = ok(cli, "streams list --account alice")
    looked_up = ok(cli, "streams lookup --account bob", stream["code"])
    subscriptions = ok(cli, "streams subscriptions --account bob")
    cli_send = send(cli, stream["id"])

    with TestClient(create_app(open_services(), run_engine=False)) as client:
        as_alice = {"X-API-Key": key}
        as_bob = {"Authorization": f"Bearer {token}"}
        http_list = client.get("/api/streams", headers=as_alice).json()
        http_lookup = client.get(f"/api/streams/lookup/{stream['code']}", headers=as_bob).json()
        http_subscriptions = client.get("/api/streams/subscriptions", headers=as_bob).json()
        http_create = client.post("/api/streams", headers=as_alice, json={"name": "Via HTTP"})
        http_send = client.post(
            f"/api/streams/{stream['id']}/send", headers=as_alice, json={"title": "hi"}
        )
        http_subscribe = client.post(
            "/api/streams/subscribe",
            headers={"Authorization": f"Bearer {ok(cli, 'token issue carol')['token']}"},
            json={"code": stream["code"]},
        )

    assert listed == http_list
    assert {**stream, "subscribers": 1} in http_list
    assert looked_up == http_lookup
    assert subscriptions == http_subscriptions == [subscription]
    assert http_create.status_code == 201
    assert set(http_create.json()) == set(stream) == STREAM_KEYS
    assert http_send.status_code == 201
    assert set(http_send.json()) == set(cli_send)
    assert {k: v for k, v in http_send.json().items() if k != "notificationId"} == {
        k: v for k, v in cli_send.items() if k != "notificationId"
    }
    assert http_subscribe.status_code == 201
    assert set(http_subscribe.json()) == set(subscription)
    assert set(http_subscribe.json()["stream"]) == set(subscription["stream"]) == SUMMARY_KEYS
    # A stream made over HTTP is one pushctl lists too, in the same shape.
    assert http_create.json() in ok(cli, "streams list --account alice")


def test_json_is_the_converter_views(cli: Cli, open_services: OpenServices) -> None:
    stream = create(cli)
    subscribe(cli, stream["code"])
    services = open_services()

    [view] = services.streams.list("alice")
    [(subscription, sub_view)] = services.streams.subscriptions("bob")
    found = services.streams.lookup("bob", stream["code"])

    assert ok(cli, "streams list --account alice") == [stream_json(view)]
    assert ok(cli, "streams subscriptions --account bob") == [
        subscription_json(subscription, sub_view)
    ]
    assert ok(cli, "streams lookup --account bob", stream["code"]) == lookup_json(found)

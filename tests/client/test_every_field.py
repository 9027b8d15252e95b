"""Every field of a request type reaches the server through the client's keywords.

The keywords are derived from the request types (``pushcore.domain.inputs``),
so a new field needs no client code; these tests make sure of it against a real
``pushctl serve``: a value for every field, sent and read back. A field added
to NewNotification fails here until it has a value below (one line).
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import attrs
import pytest

import pushcore
from pushcore.domain.inputs import NewNotification, NewStream, StreamSend
from tests.client.conftest import Account
from tests.e2e.server import Server
from tests.fakes.icon_server import IconServer, running_icon_server, tiny_png

pytestmark = pytest.mark.slow

DEVICE = "phone-every-field"
AT = (datetime.now(UTC) + timedelta(days=2)).replace(microsecond=0)


@pytest.fixture
def icon() -> Iterator[str]:
    """The URL of a real PNG on loopback: the server checks a sender icon when it comes in."""
    server: IconServer
    with running_icon_server() as server:
        yield server.serve("/avatar.png", tiny_png(), "image/png")


def every_field(icon: str) -> dict[str, Any]:
    """A value, none of them the default, for every field of a notification."""
    return {
        "title": "every field",
        "body": "the body",
        "icon_style": pushcore.IconStyle.TERMINAL,
        "sound": pushcore.Sound.SOFT,
        "delay": "custom",
        "custom_delay": 90,
        "priority": pushcore.Priority.HIGH,
        "target_device_token": DEVICE,
        "metadata": {"build": "7"},
        "scheduled_at": AT,
        "sender_name": "CI",
        "sender_icon": icon,
        "collapse_key": "every-field",
        "renotify": False,
        # ttl and expiresAt exclude each other: sent as expiresAt, the ttl has its own test.
        "ttl": None,
        "expires_at": AT + timedelta(minutes=10),
        # A timing of its own (not with scheduled_at or delay): its own test below.
        "deliver_at": None,
    }


def names(request: type[Any]) -> list[str]:
    return [a.name for a in attrs.fields(request)]


def test_every_notification_field_has_a_value_here(icon: str) -> None:
    assert list(every_field(icon)) == names(NewNotification), "give the new field a value"


def assert_stored(found: pushcore.NotificationView, sent: dict[str, Any]) -> None:
    """The notification as read back holds every value it was sent with."""
    assert {name: getattr(found, name) for name in sent} == sent


def test_every_field_is_stored_from_create_and_from_a_batch_item(
    server: Server, account: Account, icon: str
) -> None:
    sent = every_field(icon)
    with pushcore.Client(server.base, api_key=account.api_key) as client:
        client.devices.register("android", DEVICE)
        created = client.notifications.create(**sent)
        assert_stored(client.notifications.get(created.id), sent)
        [item] = client.notifications.create_many([sent])
        assert_stored(client.notifications.get(item.id), sent)


def test_the_async_client_takes_every_field(server: Server, account: Account, icon: str) -> None:
    sent = every_field(icon)

    async def program() -> pushcore.NotificationView:
        async with pushcore.AsyncClient(server.base, api_key=account.api_key) as client:
            await client.devices.register("android", DEVICE)
            created = await client.notifications.create(**sent)
            return await client.notifications.get(created.id)

    assert_stored(asyncio.run(program()), sent)


def test_every_stream_field_is_sent(server: Server, account: Account, icon: str) -> None:
    stream_fields = {"name": "Deploys", "description": "main deploys", "icon_url": icon}
    send_fields: dict[str, Any] = {
        "title": "v2",
        "body": "notes",
        "sound": pushcore.Sound.SOFT,
        "priority": pushcore.Priority.HIGH,
        "sender_name": "CI",
        "sender_icon": icon,
        "collapse_key": "deploys",
        "renotify": False,
        "ttl": 60,
        "expires_at": None,  # not with ttl
        "deliver_at": None,  # goes now: test_deliver_at_takes_a_dict below
    }
    assert list(stream_fields) == names(NewStream), "give the new field a value"
    assert list(send_fields) == names(StreamSend), "give the new field a value"
    del send_fields["expires_at"]
    with pushcore.Client(server.base, api_key=account.api_key) as client:
        stream = client.streams.create(**stream_fields)
        assert (stream.name, stream.description, stream.icon_url) == tuple(stream_fields.values())
        result = client.streams.send(stream.id, **send_fields)
        found = client.notifications.get(result.notification_id)
    assert {name: getattr(found, name) for name in send_fields} == send_fields


def test_deliver_at_takes_a_dict_with_the_apis_names(server: Server, account: Account) -> None:
    day = (datetime.now(UTC) + timedelta(days=3)).date().isoformat()
    with pushcore.Client(server.base, api_key=account.api_key) as client:
        created = client.notifications.create(
            "stand-up", deliver_at={"localTime": "09:00", "date": day}
        )
        found = client.notifications.get(created.id)
    assert found.deliver_at is not None
    assert (found.deliver_at.local_time, found.deliver_at.date) == ("09:00", day)
    # The account's zone is UTC (the default): 09:00 UTC that day.
    assert found.scheduled_at == datetime.fromisoformat(f"{day}T09:00Z")


@pytest.mark.parametrize("client_class", [pushcore.Client, pushcore.AsyncClient])
def test_the_signature_shows_every_field_as_a_keyword(client_class: type[Any]) -> None:
    notifications = client_class("http://127.0.0.1:9").notifications
    parameters = inspect.signature(notifications.create).parameters
    assert list(parameters) == names(NewNotification)
    title, *rest = parameters.values()
    assert title.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
    assert all(p.kind is p.KEYWORD_ONLY and p.default is None for p in rest)
    streams = client_class("http://127.0.0.1:9").streams
    assert list(inspect.signature(streams.send).parameters) == ["stream_id", *names(StreamSend)]
    assert list(inspect.signature(streams.create).parameters) == names(NewStream)


def test_help_says_what_each_keyword_means() -> None:
    doc = inspect.getdoc(pushcore.Client("http://127.0.0.1:9").notifications.create) or ""
    assert "body: The text under the title (up to 2000 chars)." in doc
    assert all(f"    {name}: " in doc for name in names(NewNotification)[1:])


def test_an_unknown_keyword_is_a_type_error_naming_the_valid_ones(
    server: Server, account: Account
) -> None:
    with pushcore.Client(server.base, api_key=account.api_key) as client:
        with pytest.raises(TypeError) as raised:
            client.notifications.create("hi", colour="red")
        message = str(raised.value)
        assert "'colour'" in message
        assert all(name in message for name in names(NewNotification))
        with pytest.raises(TypeError, match=r"'colour'.*renotify"):
            client.streams.send("str_x", "hi", colour="red")
        assert list(client.notifications.list()) == []

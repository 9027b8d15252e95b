"""pushcore.Client against a real `pushctl serve`: what a script does with the library."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest

import pushcore
from tests.client.conftest import ALL_SCOPES, Account, new_account
from tests.e2e.server import Server
from tests.fakes.receiver import Receiver

pytestmark = pytest.mark.slow


def settled(client: pushcore.Client, notification_id: str) -> pushcore.NotificationView:
    """The notification once it left QUEUED (or as it is after ten seconds)."""
    deadline = time.monotonic() + 10
    while True:
        found = client.notifications.get(notification_id)
        if found.status != "QUEUED" or time.monotonic() > deadline:
            return found
        time.sleep(0.1)


def test_a_script_registers_schedules_lists_gets_cancels_and_counts(
    server: Server, receiver: Receiver
) -> None:
    name = new_account(server).name
    token = server.user(name)["Authorization"].removeprefix("Bearer ")
    with pushcore.Client(server.base, token=token) as user:
        key = user.keys.create("script", ALL_SCOPES)
    assert key.key.startswith("psk_")
    assert key.key_prefix == key.key[:12]

    with pushcore.Client(server.base, api_key=key.key) as client:
        device = client.devices.register("webhook", receiver.url("/hook"), name="ci")
        assert device.platform is pushcore.Platform.WEBHOOK
        assert device.name == "ci"
        assert device.is_active
        assert [d.id for d in client.devices.list()] == [device.id]

        now = datetime.now(UTC)
        sent = client.notifications.create(
            "Deploy done",
            body="v1.2 is live",
            priority="high",
            metadata={"build": "42"},
            scheduled_at=now,
        )
        assert sent.status == "QUEUED"
        assert sent.devices_targeted == 1
        assert sent.created_at.tzinfo is not None
        assert receiver.wait_for(1, path="/hook")
        payload = receiver.delivered("/hook")[0].body
        assert payload["notificationId"] == sent.id
        assert payload["title"] == "Deploy done"
        assert payload["metadata"] == {"build": "42"}

        delivered = settled(client, sent.id)
        assert delivered.status == "DELIVERED"
        assert delivered.deliveries == pushcore.NotificationDeliveriesView(0, 1, 0, 0, 0, 0)
        assert delivered.priority is pushcore.Priority.HIGH
        assert delivered.stream is None
        [shown] = client.notifications.deliveries(sent.id)
        assert (shown.device_id, shown.device_name, shown.status) == (device.id, "ci", "DELIVERED")
        assert shown.delivered_at is not None
        one_page = client.notifications.deliveries_page(sent.id, status="DELIVERED", limit=1)
        assert (one_page.items, one_page.next_cursor) == ((shown,), None)

        # More than one page (the client asks for pages of 100), all scheduled later.
        later = [client.notifications.create(f"later {i}", delay="1h") for i in range(101)]
        cancelled = client.notifications.cancel(later[0].id)
        assert cancelled.status == "CANCELLED"

        listed = list(client.notifications.list())
        assert [n.id for n in listed] == [n.id for n in reversed([sent, *later])]
        assert all(n.deliveries is None for n in listed)  # counts only on get
        assert [n.id for n in client.notifications.list(status="CANCELLED")] == [later[0].id]
        # One page at a time, as a paging UI (or pushctl --limit/--cursor) asks.
        first = client.notifications.page(limit=2)
        assert [n.id for n in first.items] == [later[-1].id, later[-2].id]
        assert first.next_cursor is not None
        second = client.notifications.page(limit=2, cursor=first.next_cursor)
        assert [n.id for n in second.items] == [later[-3].id, later[-4].id]

        stats = client.notifications.stats()
        assert stats.total == 102
        assert stats.by_status["DELIVERED"] == 1
        assert stats.by_status["CANCELLED"] == 1
        assert stats.by_status["QUEUED"] == 100
        assert stats.deliveries.delivered == 1
        assert stats.last_24h.created == 102

        assert client.devices.remove(device.id) == pushcore.DeletedView(True, device.id)
        assert client.devices.list() == []


def test_an_unknown_id_raises_not_found(server: Server, account: Account) -> None:
    with (
        pushcore.Client(server.base, api_key=account.api_key) as client,
        pytest.raises(pushcore.NotFound) as info,
    ):
        client.notifications.get("ntf_nope")
    assert info.value.code == "not_found"
    assert info.value.status == 404
    assert info.value.message == "Notification not found"


def test_validation_errors_name_every_bad_field(server: Server, account: Account) -> None:
    with (
        pushcore.Client(server.base, api_key=account.api_key) as client,
        pytest.raises(pushcore.ValidationError) as info,
    ):
        client.notifications.create("", priority="urgent")
    error = info.value
    assert error.status == 400
    assert error.code == "validation_error"
    fields = {d.field for d in error.details}
    assert fields == {"title", "priority"}
    assert all(isinstance(d, pushcore.FieldError) and d.message for d in error.details)


def test_a_cancelled_notification_cannot_be_cancelled_again(
    server: Server, account: Account
) -> None:
    with pushcore.Client(server.base, api_key=account.api_key) as client:
        created = client.notifications.create("soon", delay="1h")
        client.notifications.cancel(created.id)
        with pytest.raises(pushcore.NotCancellable) as info:
            client.notifications.cancel(created.id)
    assert isinstance(info.value, pushcore.Conflict)
    assert info.value.status == 409


def _stats(client: pushcore.Client) -> object:
    return client.notifications.stats()


def _keys(client: pushcore.Client) -> object:
    return client.keys.list()


@pytest.mark.parametrize(
    ("credentials", "call", "message"),
    [
        ({}, _stats, "Authentication required"),
        ({"api_key": "psk_nope"}, _stats, "Invalid API key"),
        ({"token": "not-a-jwt"}, _keys, "Invalid token"),
        # Only the other credential: the client sends it and the server says which it needs.
        ({"token": "ACCOUNT"}, _stats, "This endpoint requires an API key"),
        ({"api_key": "ACCOUNT"}, _keys, "This endpoint requires a user token"),
    ],
)
def test_401_carries_the_server_s_message(
    server: Server,
    account: Account,
    credentials: dict[str, str],
    call: Callable[[pushcore.Client], object],
    message: str,
) -> None:
    own = {"token": account.token, "api_key": account.api_key}
    given = {k: own[k] if v == "ACCOUNT" else v for k, v in credentials.items()}
    client = pushcore.Client(server.base, api_key=given.get("api_key"), token=given.get("token"))
    with client, pytest.raises(pushcore.Unauthorized) as info:
        call(client)
    assert (info.value.status, info.value.code, info.value.message) == (
        401,
        "unauthorized",
        message,
    )


def test_keys_are_created_listed_and_revoked_with_a_token(server: Server, account: Account) -> None:
    expires = datetime.now(UTC).replace(microsecond=0) + timedelta(days=7)
    with pushcore.Client(server.base, token=account.token) as user:
        created = user.keys.create("reader", ["notifications:read"], expires_at=expires)
        assert created.scopes == (pushcore.Scope.NOTIFICATIONS_READ,)
        assert created.expires_at == expires
        listed = {k.id: k for k in user.keys.list()}
        assert listed[created.id].key_prefix == created.key[:12]
        assert not hasattr(listed[created.id], "key")
        assert user.keys.revoke(created.id) == pushcore.DeletedView(True, created.id)
        assert not {k.id: k for k in user.keys.list()}[created.id].is_active
    with (
        pushcore.Client(server.base, api_key=created.key) as revoked,
        pytest.raises(pushcore.Unauthorized, match="API key revoked"),
    ):
        revoked.notifications.stats()


def test_a_stream_from_publisher_to_subscriber(server: Server, receiver: Receiver) -> None:
    creator, subscriber = new_account(server), new_account(server)
    with (
        pushcore.Client(server.base, api_key=creator.api_key, token=creator.token) as pub,
        pushcore.Client(server.base, token=subscriber.token) as sub,
    ):
        stream = pub.streams.create("Deploys", description="every deploy")
        assert stream.subscribers == 0
        assert stream.description == "every deploy"
        found = sub.streams.lookup(stream.code)
        assert (found.id, found.is_subscribed) == (stream.id, False)

        sub.devices.register("webhook", receiver.url("/phone"))
        subscription = sub.streams.subscribe(stream.code)
        assert subscription.stream.id == stream.id
        assert subscription.stream.subscribers == 1
        assert sub.streams.lookup(stream.code).is_subscribed
        with pytest.raises(pushcore.AlreadySubscribed):
            sub.streams.subscribe(stream.code)
        with pytest.raises(pushcore.OwnStream) as own:
            pub.streams.subscribe(stream.code)
        assert own.value.status == 403

        result = pub.streams.send(stream.id, "v2 shipped", body="hello")
        assert (result.sent, result.subscribers) == (1, 1)
        assert result.stream == pushcore.StreamLabelView("Deploys", stream.code)
        assert receiver.wait_for(1, path="/phone")
        assert receiver.delivered("/phone")[0].body["stream"] == {
            "name": "Deploys",
            "code": stream.code,
        }
        record = pub.notifications.get(result.notification_id)
        assert record.stream == pushcore.StreamRefView(stream.id, "Deploys", stream.code)

        assert [s.id for s in sub.streams.subscriptions()] == [subscription.id]
        assert [s.subscribers for s in pub.streams.list()] == [1]
        sub.streams.unsubscribe(subscription.id)
        assert sub.streams.subscriptions() == []
        assert pub.streams.delete(stream.id) == pushcore.DeletedView(True, stream.id)
        with pytest.raises(pushcore.NotFound):
            sub.streams.lookup(stream.code)

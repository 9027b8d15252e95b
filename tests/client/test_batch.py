"""client.notifications.create_many against a real `pushctl serve`: the batch endpoint."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import pytest

import pushcore
from tests.client.conftest import Account
from tests.e2e.server import Server

pytestmark = pytest.mark.slow


def test_create_many_schedules_every_item_in_order(server: Server, account: Account) -> None:
    at = (datetime.now(UTC) + timedelta(hours=2)).replace(microsecond=0)
    with pushcore.Client(server.base, api_key=account.api_key) as client:
        client.devices.register("android", "phone-1")
        created = client.notifications.create_many(
            [
                {"title": "first", "delay": "1h", "metadata": {"build": "7"}},
                {"title": "second", "target_device_token": "phone-1", "scheduled_at": at},
                {"title": "third", "priority": pushcore.Priority.HIGH, "sender_name": "CI"},
            ]
        )
        assert [c.title for c in created] == ["first", "second", "third"]
        assert all(isinstance(c, pushcore.NotificationCreatedView) for c in created)
        assert created[1].scheduled_at == at
        second = client.notifications.get(created[1].id)
        assert second.target_device_token == "phone-1"
        assert client.notifications.get(created[0].id).metadata == {"build": "7"}
        assert client.notifications.get(created[2].id).priority is pushcore.Priority.HIGH


def test_an_invalid_item_raises_naming_it_and_stores_nothing(
    server: Server, account: Account
) -> None:
    with pushcore.Client(server.base, api_key=account.api_key) as client:
        with pytest.raises(pushcore.ValidationError) as raised:
            client.notifications.create_many(
                [{"title": "fine"}, {"title": ""}, {"title": "x", "body": "y" * 2001}]
            )
        fields = [d.field for d in raised.value.details]
        assert fields == ["notifications[1].title", "notifications[2].body"]
        assert list(client.notifications.list()) == []


def test_an_unknown_argument_is_a_type_error_naming_the_item(
    server: Server, account: Account
) -> None:
    with pushcore.Client(server.base, api_key=account.api_key) as client:
        with pytest.raises(TypeError, match="item 1"):
            client.notifications.create_many([{"title": "a"}, {"title": "b", "colour": "red"}])
        assert list(client.notifications.list()) == []


def test_the_async_client_creates_many(server: Server, account: Account) -> None:
    async def program() -> list[str]:
        async with pushcore.AsyncClient(server.base, api_key=account.api_key) as client:
            created = await client.notifications.create_many(
                [{"title": f"n{i}", "delay": "1h"} for i in range(3)]
            )
            return [c.title for c in created]

    assert asyncio.run(program()) == ["n0", "n1", "n2"]

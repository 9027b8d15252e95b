"""pushcore.AsyncClient against a real `pushctl serve`: the same calls, awaited."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import pytest

import pushcore
from tests.client.conftest import ALL_SCOPES, Account
from tests.e2e.server import Server
from tests.fakes.receiver import Receiver

pytestmark = pytest.mark.slow


async def settled(client: pushcore.AsyncClient, notification_id: str) -> pushcore.NotificationView:
    """The notification once it left QUEUED (or as it is after ten seconds)."""
    for _ in range(100):
        found = await client.notifications.get(notification_id)
        if found.status != "QUEUED":
            break
        await asyncio.sleep(0.1)
    return found


def test_an_asyncio_program_schedules_lists_gets_cancels_and_counts(
    server: Server, account: Account, receiver: Receiver
) -> None:
    async def program() -> None:
        async with pushcore.AsyncClient(server.base, token=account.token) as user:
            key = await user.keys.create("async", ALL_SCOPES)
            assert key.id in {k.id for k in await user.keys.list()}
        async with pushcore.AsyncClient(server.base, api_key=key.key) as client:
            device = await client.devices.register("webhook", receiver.url("/async"))
            sent = await client.notifications.create("Now", scheduled_at=datetime.now(UTC))
            assert sent.devices_targeted == 1
            later = await asyncio.gather(
                *(client.notifications.create(f"later {i}", delay="1h") for i in range(101))
            )
            cancelled = await client.notifications.cancel(later[0].id)
            assert cancelled.status == "CANCELLED"

            delivered = await settled(client, sent.id)
            assert delivered.status == "DELIVERED"
            assert delivered.deliveries == pushcore.NotificationDeliveriesView(0, 1, 0, 0, 0, 0)

            [shown] = [d async for d in client.notifications.deliveries(sent.id)]
            assert (shown.device_id, shown.status) == (device.id, "DELIVERED")
            assert [d async for d in client.notifications.deliveries(sent.id, "failed")] == []
            listed = [n.id async for n in client.notifications.list()]
            assert sorted(listed) == sorted([sent.id, *(n.id for n in later)])
            assert listed == sorted(listed, reverse=True)  # newest first; ids sort by time
            queued = [n async for n in client.notifications.list(status="QUEUED")]
            assert len(queued) == 100

            stats = await client.notifications.stats()
            assert (stats.total, stats.by_status["DELIVERED"]) == (102, 1)
            removed = await client.devices.remove(device.id)
            assert removed.id == device.id
            with pytest.raises(pushcore.NotFound) as info:
                await client.notifications.get("ntf_nope")
            assert (info.value.status, info.value.code) == (404, "not_found")

    asyncio.run(program())
    assert receiver.delivered("/async")[0].body["title"] == "Now"


def test_the_async_stream_calls_are_the_sync_ones(server: Server, account: Account) -> None:
    async def program() -> None:
        async with pushcore.AsyncClient(
            server.base, api_key=account.api_key, token=account.token
        ) as client:
            stream = await client.streams.create("Alerts", icon_url=None)
            assert [s.id for s in await client.streams.list()] == [stream.id]
            with pytest.raises(pushcore.OwnStream):
                await client.streams.subscribe(stream.code)
            sent = await client.streams.send(stream.id, "nobody listens")
            assert (sent.sent, sent.subscribers) == (0, 0)
            assert (await client.streams.lookup(stream.code)).is_subscribed is False
            assert await client.streams.subscriptions() == []
            await client.streams.delete(stream.id)
            assert await client.streams.list() == []

    asyncio.run(program())

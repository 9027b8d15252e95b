"""client.schedules, sync and async, against the real `pushctl serve` of the client tests."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import pytest

import pushcore
from tests.client.conftest import Account
from tests.e2e.server import Server

pytestmark = pytest.mark.slow


def test_every_schedule_call_sync(server: Server, account: Account) -> None:
    with pushcore.Client(server.base, api_key=account.api_key) as client:
        created = client.schedules.create(
            "Stand-up",
            "FREQ=DAILY",
            {"title": "Stand-up", "priority": "high"},
            start="2030-03-30T02:30:00",
            time_zone="Europe/Berlin",
            catch_up={"mode": "all", "window": 600},
        )
        assert (created.state, created.catch_up.mode, created.template["priority"]) == (
            "ACTIVE",
            "all",
            "high",
        )
        assert client.schedules.get(created.id) == created
        assert [s.id for s in client.schedules.list()] == [created.id]
        assert client.schedules.page(state="PAUSED").items == ()
        spring = client.schedules.occurrences(
            created.id, since=datetime(2030, 3, 31, tzinfo=UTC), limit=1
        )
        assert (spring[0].local_time, spring[0].shifted) == ("2030-03-31T02:30:00", True)
        edited = client.schedules.update(created.id, {"name": "Daily"}, if_revision=1)
        assert (edited.name, edited.revision) == ("Daily", 2)
        with pytest.raises(pushcore.PushcoreError) as stale:
            client.schedules.update(created.id, {"name": "Late"}, if_revision=1)
        assert stale.value.code == "revision_mismatch"
        assert client.schedules.pause(created.id).state == "PAUSED"
        assert client.schedules.resume(created.id).state == "ACTIVE"
        assert client.schedules.trigger(created.id).sent == 1
        assert client.schedules.delete(created.id).id == created.id
        with pytest.raises(pushcore.NotFound):
            client.schedules.get(created.id)


def test_the_async_client_has_the_same_calls(server: Server, account: Account) -> None:
    async def program() -> None:
        async with pushcore.AsyncClient(server.base, token=account.token) as client:
            created = await client.schedules.create("Hourly", "FREQ=HOURLY", {"title": "Tick"})
            found = await client.schedules.occurrences(created.id, limit=3)
            assert len(found) == 3
            assert (await client.schedules.pause(created.id)).state == "PAUSED"
            assert [s.id async for s in client.schedules.list(state="PAUSED")] == [created.id]
            await client.schedules.delete(created.id)

    asyncio.run(program())

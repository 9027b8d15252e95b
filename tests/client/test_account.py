"""client.account and client.streams.mute against a real `pushctl serve` (sync and async)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import pytest

import pushcore
from tests.client.conftest import Account, new_account
from tests.e2e.server import Server

pytestmark = pytest.mark.slow
NIGHT = {"start": "22:00", "end": "07:00", "mode": "silent"}


def test_a_script_reads_and_changes_its_settings(server: Server, account: Account) -> None:
    with pushcore.Client(server.base, token=account.token) as client:
        found = client.account.get()
        assert (found.id, found.time_zone, found.quiet_hours) == (account.name, "UTC", None)
        changed = client.account.update(time_zone="Europe/Berlin", quiet_hours=NIGHT)
        assert changed.quiet_hours is not None
        assert (changed.quiet_hours.start, changed.quiet_hours.mode) == ("22:00", "silent")
        snoozed = client.account.update(snooze_until=datetime(2030, 1, 1, tzinfo=UTC))
        assert snoozed.snooze_until == datetime(2030, 1, 1, tzinfo=UTC)
        assert snoozed.time_zone == "Europe/Berlin"  # not given: kept
        cleared = client.account.update(quiet_hours=None, snooze_until=None)
        assert (cleared.quiet_hours, cleared.snooze_until) == (None, None)
        with pytest.raises(pushcore.ValidationError) as refused:
            client.account.update(time_zone="+02:00")
        assert [d.field for d in refused.value.details] == ["time_zone"]  # the argument


def test_the_async_client_mutes_a_subscription(server: Server, account: Account) -> None:
    reader = new_account(server)

    async def program() -> None:
        async with (
            pushcore.AsyncClient(server.base, api_key=account.api_key) as owner,
            pushcore.AsyncClient(server.base, token=reader.token) as client,
        ):
            stream = await owner.streams.create("Scores")
            subscription = await client.streams.subscribe(stream.code)
            until = datetime(2030, 1, 1, tzinfo=UTC)
            muted = await client.streams.mute(subscription.id, until, allow_critical=False)
            assert (muted.muted_until, muted.allow_critical) == (until, False)
            unmuted = await client.streams.mute(subscription.id, None)
            assert (unmuted.muted_until, unmuted.allow_critical) == (None, True)
            settings = await client.account.update(quiet_hours=NIGHT)
            assert settings.quiet_hours is not None
            assert (await client.account.get()).quiet_hours == settings.quiet_hours

    asyncio.run(program())

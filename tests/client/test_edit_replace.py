"""client.notifications.update and .replace against a real `pushctl serve`."""

from __future__ import annotations

import asyncio

import pytest

import pushcore
from tests.client.conftest import Account
from tests.e2e.server import Server

pytestmark = pytest.mark.slow


def test_update_with_if_revision_and_replace(server: Server, account: Account) -> None:
    with pushcore.Client(server.base, api_key=account.api_key) as client:
        client.devices.register("android", "fcm-edit")
        n = client.notifications.create(
            "Build 7", body="running", delay="1h", collapse_key="build-7", metadata={"a": "1"}
        )
        edited = client.notifications.update(n.id, if_revision=1, body="passed", metadata=None)
        assert (edited.revision, edited.body, edited.metadata) == (2, "passed", {})
        with pytest.raises(pushcore.RevisionMismatch):
            client.notifications.update(n.id, if_revision=1, body="stale")
        with pytest.raises(TypeError):
            client.notifications.update(n.id, nope="x")
        new = client.notifications.replace(n.id, body="failed")
        assert (new.supersedes, new.collapse_key, new.body) == (n.id, "build-7", "failed")
        old = client.notifications.get(n.id)
        assert (old.status, old.failure_reason) == ("CANCELLED", "superseded")
        with pytest.raises(pushcore.NotEditable):
            client.notifications.update(n.id, title="late")
        page = client.notifications.page(collapse_key="build-7")
        assert [i.id for i in page.items] == [new.id, n.id]


def test_the_async_client_updates_and_replaces(server: Server, account: Account) -> None:
    async def program() -> None:
        async with pushcore.AsyncClient(server.base, api_key=account.api_key) as client:
            n = await client.notifications.create("Alarm", delay="1h")
            edited = await client.notifications.update(n.id, title="Alarm!", if_revision=1)
            assert edited.revision == 2
            new = await client.notifications.replace(n.id, delay="2h")
            assert (new.supersedes, new.collapse_key, new.title) == (n.id, n.id, "Alarm!")

    asyncio.run(program())

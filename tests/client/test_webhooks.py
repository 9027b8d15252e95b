"""client.webhooks and client.events against a real server: an endpoint made, tested,
signed (checked with pushcore.webhooks.verify), rotated, listed and removed."""

from __future__ import annotations

import asyncio
import time

import pushcore
import pushcore.webhooks
from tests.client.conftest import Account
from tests.e2e.server import Server
from tests.fakes.receiver import Receiver


def test_an_endpoint_gets_a_signed_test_event_the_client_can_follow(
    server: Server, account: Account, receiver: Receiver
) -> None:
    with pushcore.Client(server.base, token=account.token) as client:
        made = client.webhooks.create(receiver.url(), ["webhook.*"], description="demo")
        assert made.secret.startswith("whsec_")
        assert [w.id for w in client.webhooks.list()] == [made.id]
        event_id = client.webhooks.test(made.id).event_id
        assert receiver.wait_for(1)
        (got,) = receiver.requests
        body = pushcore.webhooks.verify(made.secret, got.headers, got.raw)
        assert body["id"] == event_id
        # The receiver has the request before the sender has read the answer and recorded
        # it: the attempt shows `pending` until then, `succeeded` after.
        wanted = [(event_id, "succeeded")]
        deadline = time.monotonic() + 10
        while True:
            attempts = [(a.event_id, a.status.value) for a in client.webhooks.attempts(made.id)]
            if attempts == wanted or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        assert attempts == wanted
        assert [e.id for e in client.events.list(type="webhook.test")] == [event_id]
        new = client.webhooks.rotate_secret(made.id).secret
        assert new != made.secret
        paused = client.webhooks.update(made.id, enabled=False)
        assert paused.enabled is False
        assert client.webhooks.get(made.id).enabled is False
        assert client.webhooks.delete(made.id).id == made.id
        assert client.webhooks.list() == []


def test_the_async_client_speaks_the_same(server: Server, account: Account) -> None:
    async def scenario() -> list[str]:
        async with pushcore.AsyncClient(server.base, token=account.token) as client:
            made = await client.webhooks.create("https://93.184.215.14/h")
            await client.webhooks.test(made.id)
            return [e.type async for e in client.events.list()]

    assert asyncio.run(scenario()) == ["webhook.test"]

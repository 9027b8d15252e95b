"""The sender's lanes: a backlog to one endpoint goes out once each and is recorded in
batches, and endpoints that hold many POSTs open never hold up another's (no shared
connection limit between them)."""

from __future__ import annotations

import asyncio
import time
from collections import Counter

from pushcore.delivery.webhooks import EventSender, SenderConfig
from pushcore.domain.events import EventType
from pushcore.domain.model import Plan
from pushcore.events import Change, record_events
from tests.events.conftest import ALICE, World
from tests.fakes.receiver import Receiver, running_receiver


def record(world: World, type: EventType, n: int) -> list[str]:
    """``n`` events of ``type`` for Alice, in one transaction; their ids."""
    change = Change(ALICE, type, {"status": "FAILED", "reason": "test"}, None)
    with world.services.store.transaction() as tx:
        return [e.id for e in record_events(tx, [change] * n, world.clock.now())]


def test_a_backlog_goes_out_once_each_and_every_answer_is_recorded(
    world: World, receiver: Receiver
) -> None:
    made = world.create(receiver.url(), ["delivery.*"])
    sent = record(world, EventType.DELIVERY_FAILED, 11)
    rounds = 0
    while world.pump():  # the test's share: 4 claimed, 2 at once
        rounds += 1
    assert rounds == 3
    counts = Counter(r.headers["webhook-id"] for r in receiver.requests)
    assert sorted(counts) == sorted(sent)
    assert set(counts.values()) == {1}
    assert max(receiver.peak.values()) <= world.sender.config.per_endpoint
    items = world.client.get(f"/api/webhooks/{made['id']}/attempts", headers=world.auth())
    attempts = items.json()["items"]
    assert sorted(a["eventId"] for a in attempts) == sorted(sent)
    assert {(a["status"], a["responseStatus"]) for a in attempts} == {("succeeded", 200)}
    assert world.pump() == 0  # nothing left pending or leased


def test_endpoints_holding_many_posts_open_do_not_hold_up_another(
    world: World, receiver: Receiver
) -> None:
    world.services.accounts.set_plan(ALICE, Plan.PRO)
    with running_receiver() as slow:
        slow.delay = 3.0
        for n in range(3):
            world.create(slow.url(f"/slow{n}"), ["delivery.*"])
        fast = world.create(receiver.url(), ["webhook.*"])
        # 120 slow POSTs at once (more than a pool shared by all endpoints would open),
        # claimed before the fast endpoint's one.
        record(world, EventType.DELIVERY_FAILED, 40)
        world.client.post(f"/api/webhooks/{fast['id']}/test", headers=world.auth())
        sender = EventSender(
            world.services.store,
            world.clock,
            world.guard,
            "sender-lanes",
            SenderConfig(timeout=10.0, per_endpoint=40, claimed_per_endpoint=40),
        )

        async def scenario() -> float:
            started = time.monotonic()
            assert await sender.round() == 121
            while not receiver.requests:
                await asyncio.sleep(0.01)
                assert time.monotonic() - started < 2.0, "the fast endpoint waited"
            took = time.monotonic() - started
            await sender.aclose()
            return took

        assert asyncio.run(scenario()) < 2.0


def test_after_a_410_the_endpoint_s_other_claimed_events_are_not_posted(
    world: World, receiver: Receiver
) -> None:
    made = world.create(receiver.url(), ["delivery.*"])
    receiver.answer("/hook", 410)
    record(world, EventType.DELIVERY_FAILED, 4)
    sender = EventSender(
        world.services.store,
        world.clock,
        world.guard,
        "sender-gone",
        SenderConfig(timeout=5.0, per_endpoint=1, claimed_per_endpoint=4),
    )

    async def scenario() -> int:
        started = await sender.round()
        await sender.drain()
        await sender.aclose()
        return started

    assert asyncio.run(scenario()) == 4
    assert len(receiver.requests) == 1
    endpoint = world.client.get(f"/api/webhooks/{made['id']}", headers=world.auth()).json()
    assert endpoint["enabled"] is False
    items = world.client.get(f"/api/webhooks/{made['id']}/attempts", headers=world.auth())
    assert {a["status"] for a in items.json()["items"]} == {"failed"}

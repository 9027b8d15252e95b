"""Several senders on one database: each attempt is taken by one, and a sender that
died mid-POST (kill -9: its lease never renewed, its answer never recorded) has its
attempts sent again by another, with the same webhook-id."""

from __future__ import annotations

import asyncio
from collections import Counter
from datetime import timedelta

from pushcore.delivery.webhooks import EventSender, SenderConfig
from tests.events.conftest import World
from tests.fakes.receiver import Receiver


def test_two_senders_never_post_one_attempt_twice(world: World, receiver: Receiver) -> None:
    endpoints = [world.create(receiver.url(f"/e{n}"))["id"] for n in range(3)]
    sent = [
        world.client.post(f"/api/webhooks/{e}/test", headers=world.auth()).json()["eventId"]
        for e in endpoints
        for _ in range(5)
    ]
    other = EventSender(world.services.store, world.clock, world.guard, "sender-2")

    async def both() -> None:
        for _ in range(3):
            await asyncio.gather(world.sender.round(), other.round())
            await asyncio.gather(world.sender.drain(), other.drain())
        await world.sender.aclose()
        await other.aclose()

    asyncio.run(both())
    counts = Counter(r.headers["webhook-id"] for r in receiver.requests)
    assert sorted(counts) == sorted(sent)
    assert set(counts.values()) == {1}


def test_a_dead_sender_s_attempts_are_sent_again_with_the_same_id(
    world: World, receiver: Receiver
) -> None:
    made = world.create(receiver.url())
    event_id = world.client.post(f"/api/webhooks/{made['id']}/test", headers=world.auth()).json()[
        "eventId"
    ]
    # A sender claimed the attempt (and posted it, say) and was killed before it
    # recorded the answer: its lease stands, nobody renews it.
    now, lease = world.clock.now(), SenderConfig().lease
    with world.services.store.transaction() as tx:
        claimed = tx.events.claim(now, "killed", now + lease, 10, 4, [])
    assert [a.event_id for a in claimed] == [event_id]
    assert world.pump() == 0  # leased to the dead sender
    world.clock.advance(lease + timedelta(seconds=1))
    assert world.pump() == 1
    (got,) = receiver.requests
    assert got.headers["webhook-id"] == event_id
    (attempt,) = world.client.get(
        f"/api/webhooks/{made['id']}/attempts", headers=world.auth()
    ).json()["items"]
    assert attempt["status"] == "succeeded"

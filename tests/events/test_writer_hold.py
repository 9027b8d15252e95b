"""The sender's share of the database's write lock (on SQLite the engine's outcome records
wait for it): its claim's write transaction holds the lease alone, the answers waiting to
be recorded go into that transaction, and its database thread is not niced with its
posting."""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any, cast

import pytest

from pushcore.delivery import event_process
from pushcore.delivery.webhooks import EventSender, SenderConfig
from pushcore.domain.events import AttemptStatus, EventType
from pushcore.events import Change, record_events
from pushcore.outbound.guard import NetworkGuard
from pushcore.ports import Store
from pushcore.storage.sql.events import Events
from tests.events.conftest import ALICE, World
from tests.fakes.clock import FakeClock
from tests.fakes.receiver import Receiver


def record(world: World, n: int) -> list[str]:
    """``n`` events Alice's endpoint is subscribed to, in one transaction; their ids."""
    change = Change(ALICE, EventType.DELIVERY_FAILED, {"status": "FAILED", "reason": "x"}, None)
    with world.services.store.transaction() as tx:
        return [e.id for e in record_events(tx, [change] * n, world.clock.now())]


def sender_of_four(world: World, receiver: Receiver, owner: str) -> EventSender:
    """A sender whose endpoint (on ``receiver``) has a share of 4 claimed at once, and whose
    ``gather`` (30 s) never ends within a test."""
    world.create(receiver.url(), ["delivery.*"])
    config = SenderConfig(timeout=2.0, per_endpoint=4, claimed_per_endpoint=4, gather=30.0)
    return EventSender(world.services.store, world.clock, world.guard, owner, config)


@contextlib.contextmanager
def write_transactions(world: World, monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """The store's write transactions counted: [open now, begun so far]."""
    store = world.services.store
    counts = [0, 0]
    transaction = store.transaction

    @contextlib.contextmanager
    def counted(**kwargs: Any) -> Iterator[Any]:
        with transaction(**kwargs) as tx:
            counts[0] += 1
            counts[1] += 1
            try:
                yield tx
            finally:
                counts[0] -= 1

    monkeypatch.setattr(store, "transaction", counted)
    yield counts


def test_a_claim_reads_its_events_and_endpoints_outside_its_write_transaction(
    world: World, receiver: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    world.create(receiver.url(), ["delivery.*"])
    sent = record(world, 3)
    reads: list[tuple[str, int]] = []  # (what was read, write transactions open meanwhile)
    by_ids = Events.by_ids
    with write_transactions(world, monkeypatch) as writing:

        def events_by_ids(self: Events, ids: Any) -> Any:
            reads.append(("events", writing[0]))
            return by_ids(self, ids)

        monkeypatch.setattr(Events, "by_ids", events_by_ids)
        assert world.pump() == 3
    assert sorted(r.headers["webhook-id"] for r in receiver.requests) == sorted(sent)
    # The events' data was read once, with no write transaction open.
    assert reads == [("events", 0)]


def test_the_answers_waiting_to_be_recorded_go_into_the_next_claim_s_transaction(
    world: World, receiver: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    made = world.create(receiver.url(), ["delivery.*"])
    # The recorder waits 30 s between two records: only a claim records sooner.
    config = SenderConfig(timeout=2.0, gather=30.0)
    sender = EventSender(world.services.store, world.clock, world.guard, "sender-2", config)

    async def rounds() -> list[int]:
        record(world, 1)
        assert await sender.round() == 1
        await until(lambda: receiver.requests and not sender._answered)  # recorded at once
        later = record(world, 2)
        assert await sender.round() == 2
        # Both answered, and waiting for the recorder (its list, read here alone).
        await until(lambda: len(sender._answered) == 2)
        with write_transactions(world, monkeypatch) as counts:
            assert await sender.round() == 0
        await sender.aclose()
        with world.services.store.read() as tx:
            statuses = {a.event_id: a.status for a in tx.events.attempts(made["id"], None, 9)}
        assert [statuses[i] for i in later] == [AttemptStatus.SUCCEEDED] * 2
        return counts

    # One write transaction: the two answers recorded, and the claim that found nothing.
    assert asyncio.run(rounds()) == [0, 1]


async def until(done: Any, within: float = 10.0) -> None:
    """Poll ``done`` until it holds (AssertionError after ``within`` seconds)."""
    for _ in range(int(within / 0.01)):
        if done():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("not within the time")


@pytest.mark.skipif(sys.platform != "linux", reason="Linux keeps a niceness per thread")
def test_the_sender_s_database_thread_keeps_the_engine_s_priority() -> None:
    # Neither its store nor its clock is used here.
    sender = EventSender(cast(Store, None), FakeClock(datetime.now(UTC)), NetworkGuard(), "s-1")
    found: dict[str, int] = {}

    def child() -> None:
        # A thread of its own: the niceness it takes stays with it, not with the tests'.
        here = threading.get_native_id()
        found["before"] = os.getpriority(os.PRIO_PROCESS, here)
        event_process._lower_posting_priority(sender)
        found["posting"] = os.getpriority(os.PRIO_PROCESS, here)
        found["database"] = os.getpriority(os.PRIO_PROCESS, sender.start_thread())
        # A thread the posting starts from now on (a name's look-up) is niced too.
        started = threading.Thread(
            target=lambda: found.update(later=os.getpriority(os.PRIO_PROCESS, 0))
        )
        started.start()
        started.join()

    thread = threading.Thread(target=child)
    thread.start()
    thread.join()
    base = found["before"]
    assert found["posting"] == min(19, base + event_process.NICENESS)
    assert found["later"] == found["posting"]
    assert found["database"] == base


def test_a_claim_takes_more_for_an_endpoint_whose_share_the_answers_it_records_free(
    world: World, receiver: Receiver
) -> None:
    # An endpoint's share (4 here) claimed, posted and answered, the answers waiting for
    # the recorder: the next round records them and, their share freed, claims the next
    # 4 in the same transaction. Before, it passed the endpoint over (its share still
    # counted as claimed until the record committed), found nothing and the sender rested.
    sender = sender_of_four(world, receiver, "sender-3")

    async def rounds() -> list[int]:
        record(world, 10)
        sender._recorded_at = time.monotonic()  # as if it just recorded: only claims record
        taken = [await sender.round()]
        await until(lambda: len(sender._answered) == 4)
        taken.append(await sender.round())
        await until(lambda: len(sender._answered) == 4)
        taken.append(await sender.round())
        await until(lambda: len(sender._answered) == 2)
        await sender.aclose()
        return taken

    assert asyncio.run(rounds()) == [4, 4, 2]
    assert len(receiver.requests) == 10


def test_an_endpoint_with_its_share_claimed_is_claimed_for_again_once_half_is_answered(
    world: World, receiver: Receiver
) -> None:
    # A fast endpoint with a backlog (a burst's events, written at its end) goes at its own
    # pace: with its whole share (4) claimed, the sender claims again once 2 are answered,
    # not a ``gather`` (30 s here) later. Before, each share waited for the gather: 5,120
    # events a second at most with the defaults (512 a tenth of a second), and a burst's
    # 4,000 events went out 0.7 s after the burst (docs/benchmarks.md). The fake clock
    # never moves, so an idle rest never ends either: a wake-up lost (room made while a
    # claim ran, then cleared by the rest) fails this too.
    sender = sender_of_four(world, receiver, "sender-4")

    async def run() -> None:
        record(world, 10)
        task = asyncio.get_running_loop().create_task(sender.run())
        try:
            await until(lambda: len(receiver.requests) == 10, within=10.0)
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    asyncio.run(run())
    assert len(receiver.requests) == 10

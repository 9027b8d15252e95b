"""A live engine keeps what it holds: leases renewed by its heartbeat, outcomes recorded
one by one, deferrals handed back unsent, records retried until the database takes them.

These run the real loop on the fake clock (see test_loop.py): every wait of the
engine ends only when the test moves the clock past it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from contextlib import AbstractContextManager
from datetime import datetime, timedelta

from pushcore.domain.errors import Unavailable
from pushcore.domain.model import Notification
from pushcore.domain.outcomes import Deferred, Delivered, Dispatch, Outcome
from pushcore.domain.states import DeliveryStatus, NotificationStatus
from pushcore.ports import Transaction
from tests.delivery.conftest import ALICE, DUE, LEASE, Harness, WatchedStore, advancing, until
from tests.fakes.gateway import ScriptedGateway

N = NotificationStatus
D = DeliveryStatus
BEAT = timedelta(seconds=2)  # EngineConfig's default heartbeat


def test_a_send_slower_than_three_leases_is_sent_once_and_recorded(h: Harness) -> None:
    h.device("tok-a")
    n = h.notify()
    engine = h.engine("engine-a", tick=30.0)
    other = h.engine("engine-b", gateway=ScriptedGateway(h.clock))

    async def scenario() -> None:
        h.gateway.hold()
        task = engine.start()
        h.clock.set(DUE)
        await until(lambda: h.gateway.waiting == 1)
        # The receiver takes three leases to answer; the engine beats all along.
        now = DUE
        while now < DUE + 3 * LEASE:
            now += BEAT
            h.clock.set(now)
            await until(lambda: lease_end(h, n) >= h.clock.now() + LEASE / 2)
            # Another engine claiming meanwhile finds nothing to take over.
            await other.tick()
        assert not other._held
        h.gateway.let_go()
        await until(lambda: h.status(n) is N.DELIVERED)
        await engine.stop()
        await task

    asyncio.run(scenario())
    assert len(h.gateway.sent) == 1
    assert h.gateway.duplicates() == {}
    assert engine.redelivered == 0
    assert h.delivery_statuses(n) == [D.DELIVERED]


def lease_end(h: Harness, n: Notification) -> datetime:
    (delivery,) = h.deliveries(n)
    assert delivery.lease_expires_at is not None
    return delivery.lease_expires_at


def test_a_deferred_delivery_goes_back_unsent_and_comes_again_when_due(h: Harness) -> None:
    h.device("tok-a")
    n = h.notify()
    h.gateway.script("tok-a", Deferred("Destination busy", 10.0))
    engine = h.engine()

    h.step(engine, DUE)
    (delivery,) = h.deliveries(n)
    # Never tried: its attempt is not counted, and it may still be cancelled.
    assert (delivery.status, delivery.attempts, delivery.due_at) == (
        D.PENDING,
        0,
        DUE + timedelta(seconds=10),
    )
    assert h.status(n) is N.QUEUED

    h.step(engine, DUE + timedelta(seconds=10))
    (delivery,) = h.deliveries(n)
    assert (delivery.status, delivery.attempts) == (D.DELIVERED, 1)
    assert [s.at for s in h.gateway.sent] == [DUE, DUE + timedelta(seconds=10)]


class OneByOne:
    """A gateway answering delivery by delivery; "tok-hang" never answers."""

    def __init__(self) -> None:
        self.hanging: list[asyncio.Future[Outcome]] = []

    async def send(self, dispatches: Sequence[Dispatch]) -> Sequence[Outcome]:
        return await asyncio.gather(*self.send_each(dispatches))

    def send_each(
        self, dispatches: Sequence[Dispatch], ready: object = None
    ) -> Sequence[asyncio.Future[Outcome]]:
        answers: list[asyncio.Future[Outcome]] = []
        for d in dispatches:
            answer = asyncio.get_running_loop().create_future()
            if d.device.token == "tok-hang":
                self.hanging.append(answer)
            else:
                answer.set_result(Delivered())
            answers.append(answer)
        return answers

    async def aclose(self) -> None:
        for answer in self.hanging:
            answer.cancel()


def test_a_receiver_that_hangs_holds_only_its_own_delivery(h: Harness) -> None:
    h.device("tok-hang")
    for i in range(5):
        h.device(f"tok-{i}")
    n = h.notify()
    gateway = OneByOne()
    engine = h.engine(gateway=gateway)

    async def scenario() -> None:
        h.clock.set(DUE)
        await engine.tick()
        # The five that were answered are recorded while the sixth hangs.
        await until(lambda: h.get(n).deliveries.delivered == 5)
        await until(lambda: engine.in_flight == 1)  # once their recording has returned
        assert h.get(n).deliveries.pending == 1
        gateway.hanging[0].set_result(Delivered())
        await engine.drain()

    asyncio.run(scenario())
    assert engine.in_flight == 0
    assert h.status(n) is N.DELIVERED


class FailingRecords(WatchedStore):
    """Write transactions fail (the database is away) while ``away`` is set."""

    away = False
    failed = 0

    def transaction(self, *, urgent: bool = False) -> AbstractContextManager[Transaction]:
        if self.away:
            self.failed += 1
            raise OSError("database is away")
        return super().transaction(urgent=urgent)


def test_outcomes_the_database_cannot_take_are_kept_and_recorded_later(h: Harness) -> None:
    h.device("tok-a")
    n = h.notify()
    store = FailingRecords(h.services.store)
    engine = h.engine(store=store)

    async def scenario() -> None:
        h.gateway.hold()
        h.clock.set(DUE)
        await engine.tick()
        await until(lambda: h.gateway.waiting == 1)
        # The database goes away before the answer comes.
        store.away = True
        h.gateway.let_go()
        # The waits between tries are on the fake clock, and the engine may set its
        # next wait before or after a move of the clock: keep moving it until it tried.
        await advancing(h, lambda: store.failed >= 3)
        # Held all along (its lease renewed by the heartbeat once it can be), never dropped.
        assert engine.in_flight == 1
        store.away = False
        await advancing(h, lambda: engine.in_flight == 0)
        await engine.drain()

    asyncio.run(scenario())
    assert len(h.gateway.sent) == 1
    assert engine.in_flight == 0
    assert h.status(n, ALICE) is N.DELIVERED


class Away(WatchedStore):
    """Every transaction fails as in an outage while ``away`` is set."""

    away = True

    def transaction(self, *, urgent: bool = False) -> AbstractContextManager[Transaction]:
        if self.away:
            raise Unavailable("The database is unavailable")
        return super().transaction(urgent=urgent)


def test_a_loop_that_cannot_claim_for_30_s_is_stuck_until_it_can(h: Harness) -> None:
    store = Away(h.services.store)
    engine = h.engine(store=store, tick=1.0)

    async def scenario() -> None:
        task = engine.start()
        assert not engine.stuck()
        for _ in range(31):
            h.clock.advance(1.0)
            await asyncio.sleep(0.01)
        assert engine.stuck()
        store.away = False
        # A second at a time until its next tick claims: on a loaded machine the loop
        # may still be in a failed tick when one step comes, and then sleeps past it
        # (one step, then a wait in real time, failed so in a full run at load 9).
        deadline = time.monotonic() + 30
        while engine.stuck():
            assert time.monotonic() < deadline, "still stuck 30 s after the database came back"
            h.clock.advance(1.0)
            await asyncio.sleep(0.01)
        await engine.stop()
        await task

    asyncio.run(scenario())

"""Graceful stop: finish what can be finished within the grace period, hand back the rest."""

from __future__ import annotations

import asyncio
import threading
from datetime import timedelta

import attrs
import pytest

from pushcore.delivery import DeliveryEngine
from pushcore.domain.model import Notification
from pushcore.domain.states import DeliveryStatus, NotificationStatus
from tests.delivery.conftest import (
    ALICE,
    DUE,
    Harness,
    WatchedStore,
    stop_at_grace_end,
    until,
)

N = NotificationStatus
D = DeliveryStatus


def stop_while_sending(h: Harness) -> None:
    """Tick at the due time with the gateway holding every send, then stop the engine."""
    engine = h.engine("engine-a", shutdown_grace=0.05)
    h.clock.set(DUE)

    async def scenario() -> None:
        h.gateway.hold()
        await engine.tick()
        await until(lambda: h.gateway.waiting == 1)
        await stop_at_grace_end(h, engine)
        assert h.gateway.waiting == 0  # the held send was cancelled

    asyncio.run(scenario())
    assert h.gateway.closed


def test_stop_hands_unsent_deliveries_back_with_their_attempt_undone(h: Harness) -> None:
    h.device("tok-a")
    h.device("tok-b")
    n = h.notify()

    stop_while_sending(h)

    for delivery in h.deliveries(n):
        assert delivery.status is D.PENDING
        assert delivery.attempts == 0
        assert delivery.lease_owner is None
        assert delivery.lease_expires_at is None
        assert delivery.due_at == DUE
    detail = h.get(n)
    assert detail.notification.status is N.QUEUED
    assert (detail.deliveries.pending, detail.deliveries.handed) == (2, 0)


def test_a_handed_back_notification_can_still_be_cancelled(h: Harness) -> None:
    h.device("tok-a")
    n = h.notify()
    stop_while_sending(h)

    assert h.services.notifications.cancel(ALICE, n.id).status is N.CANCELLED
    assert h.delivery_statuses(n) == [D.CANCELLED]


def test_a_handed_back_delivery_is_claimed_at_once_by_another_engine(h: Harness) -> None:
    h.device("tok-a")
    h.device("tok-b")
    n = h.notify()
    stop_while_sending(h)
    sent_before = len(h.gateway.sent)
    h.gateway.let_go()

    other = h.engine("engine-b")
    h.step(other, DUE)  # no lease to wait for

    assert len(h.gateway.sent) == sent_before + 2
    assert {s.attempt for s in h.gateway.sent[sent_before:]} == {1}
    assert h.status(n) is N.DELIVERED


GRACE = timedelta(seconds=5)


def due_now_with_a_grace_period(h: Harness) -> tuple[Notification, DeliveryEngine]:
    """A notification to one device, due now, and an engine with a grace period of GRACE."""
    h.device("tok-a")
    n = h.notify()
    h.clock.set(DUE)
    return n, h.engine(shutdown_grace=GRACE.total_seconds())


async def begin_stop_while_sending(h: Harness, engine: DeliveryEngine) -> asyncio.Future[None]:
    """Tick with the gateway holding the send, then begin stop(): it waits for its grace period."""
    h.gateway.hold()
    await engine.tick()
    await until(lambda: h.gateway.waiting == 1)
    stopping = asyncio.ensure_future(engine.stop())
    await until(lambda: h.clock.sleepers == [h.clock.now() + GRACE])
    return stopping


def test_stop_lets_batches_finish_within_the_grace_period(h: Harness) -> None:
    n, engine = due_now_with_a_grace_period(h)

    async def scenario() -> None:
        stopping = await begin_stop_while_sending(h, engine)
        h.gateway.let_go()  # the send ends while the grace period runs
        await stopping

    asyncio.run(scenario())

    assert h.clock.now() == DUE  # no grace period had to end
    assert h.status(n) is N.DELIVERED
    assert h.delivery_statuses(n) == [D.DELIVERED]


def test_a_send_outliving_the_grace_period_is_handed_back_only_when_it_ends(h: Harness) -> None:
    n, engine = due_now_with_a_grace_period(h)

    async def scenario() -> None:
        stopping = await begin_stop_while_sending(h, engine)
        h.clock.advance(GRACE - timedelta(milliseconds=1))
        await asyncio.sleep(0)
        assert not stopping.done()  # still within the grace period
        assert h.delivery_statuses(n) == [D.IN_FLIGHT]
        h.clock.advance(timedelta(milliseconds=1))
        await stopping

    asyncio.run(scenario())

    assert h.gateway.waiting == 0
    assert h.delivery_statuses(n) == [D.PENDING]


def test_a_stopped_engine_claims_nothing(h: Harness) -> None:
    h.device("tok-a")
    n = h.notify()
    engine = h.engine()
    asyncio.run(engine.stop())

    assert asyncio.run(engine.tick()) is None
    assert h.status(n) is N.QUEUED
    assert h.delivery_statuses(n) == [D.PENDING]


def test_a_claim_in_progress_when_stop_is_called_is_not_left_in_flight(h: Harness) -> None:
    h.device("tok-a")
    n = h.notify()
    store = WatchedStore(h.services.store)
    store.gate = gate = threading.Event()
    engine = h.engine(tick=30.0, store=store)
    h.clock.set(DUE)

    async def scenario() -> None:
        task = engine.start()
        await asyncio.to_thread(store.waiting.wait, 30)  # the claim is under way
        stopping = asyncio.ensure_future(engine.stop())
        await asyncio.sleep(0)  # stop() has begun
        assert not stopping.done()
        gate.set()  # the claim commits after that
        await stopping
        await task
        await engine.drain()

    asyncio.run(scenario())

    # The claim committed after stop() began: handed back unsent, not left in flight.
    (delivery,) = h.deliveries(n)
    assert (delivery.status, delivery.attempts, delivery.lease_owner) == (D.PENDING, 0, None)
    assert h.gateway.sent == []


@attrs.define
class Queued:
    """Two notifications and an engine whose roll-up thread is held (``release``)."""

    h: Harness
    notifications: list[Notification]
    engine: DeliveryEngine
    store: WatchedStore
    gate: threading.Event

    async def sent_and_recorded(self) -> None:
        """Send both at their due times: each is recorded; the first roll-up waits on
        the held thread, the second is queued behind it."""
        h, engine = self.h, self.engine
        h.clock.set(DUE)
        await engine.tick()
        await asyncio.to_thread(self.store.waiting.wait, 30)  # the first roll-up is held
        h.clock.set(DUE + timedelta(seconds=10))
        await engine.tick()
        await until(lambda: len(h.gateway.sent) == 2 and not engine.in_flight)
        assert engine._rollups.running  # queued, not done

    def release(self) -> None:
        """Let the held roll-ups through."""
        self.gate.set()


@pytest.fixture
def queued(db: Harness) -> Queued:
    """The harness on SQLite and PostgreSQL, set for roll-ups queued at a stop."""
    db.device("tok-a")
    notifications = [db.notify(), db.notify_in(10)]
    store = WatchedStore(db.services.store)
    store.gated_threads, store.gate = "pushcore-rollup", threading.Event()
    engine = db.engine(store=store, shutdown_grace=GRACE.total_seconds())
    return Queued(db, notifications, engine, store, store.gate)


def tracebacks(caplog: pytest.LogCaptureFixture) -> list[str]:
    """The log lines that carry a traceback."""
    return [r.getMessage() for r in caplog.records if r.exc_info]


def test_stop_rolls_up_what_is_queued_before_its_thread_goes(
    queued: Queued, caplog: pytest.LogCaptureFixture
) -> None:
    h, engine, notifications = queued.h, queued.engine, queued.notifications

    async def scenario() -> None:
        await queued.sent_and_recorded()
        stopping = asyncio.ensure_future(engine.stop())
        await until(lambda: h.clock.now() + GRACE in h.clock.sleepers or stopping.done())
        queued.release()  # within the grace period: the roll-ups go on
        await stopping
        await until(lambda: not engine._rollups.running)

    asyncio.run(scenario())

    assert tracebacks(caplog) == []
    assert [h.status(n) for n in notifications] == [N.DELIVERED, N.DELIVERED]


def test_roll_ups_a_stop_cuts_short_are_done_by_the_next_start(
    queued: Queued, caplog: pytest.LogCaptureFixture
) -> None:
    h, engine, notifications = queued.h, queued.engine, queued.notifications

    async def scenario() -> None:
        await queued.sent_and_recorded()
        await stop_at_grace_end(h, engine)  # the roll-up still held
        queued.release()
        await until(lambda: not engine._rollups.running)
        assert [h.status(n) for n in notifications] != [N.DELIVERED, N.DELIVERED]
        after = h.engine("engine-b")
        task = after.start()  # rolls up what a stopped engine left, before anything new
        await until(lambda: all(h.status(n) is N.DELIVERED for n in notifications))
        await after.stop()
        await task

    asyncio.run(scenario())

    assert tracebacks(caplog) == []
    assert len(h.gateway.sent) == 2  # nothing sent again

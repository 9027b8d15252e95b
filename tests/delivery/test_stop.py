"""Graceful stop: finish what can be finished within the grace period, hand back the rest."""

from __future__ import annotations

import asyncio
import threading
from datetime import datetime

import pytest

from pushcore.delivery.engine import Claim
from pushcore.domain.states import DeliveryStatus, NotificationStatus
from tests.delivery.conftest import ALICE, DUE, Harness, until

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
        await engine.stop()
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


def test_stop_lets_batches_finish_within_the_grace_period(h: Harness) -> None:
    h.device("tok-a")
    n = h.notify()
    engine = h.engine(shutdown_grace=5.0)
    h.clock.set(DUE)

    async def scenario() -> None:
        h.gateway.hold()
        await engine.tick()
        await until(lambda: h.gateway.waiting == 1)
        asyncio.get_running_loop().call_later(0.02, h.gateway.let_go)
        await engine.stop()

    asyncio.run(scenario())

    assert h.status(n) is N.DELIVERED
    assert h.delivery_statuses(n) == [D.DELIVERED]


def test_a_stopped_engine_claims_nothing(h: Harness) -> None:
    h.device("tok-a")
    n = h.notify()
    engine = h.engine()
    asyncio.run(engine.stop())

    assert asyncio.run(engine.tick()) is None
    assert h.status(n) is N.QUEUED
    assert h.delivery_statuses(n) == [D.PENDING]


def test_a_claim_in_progress_when_stop_is_called_is_not_left_in_flight(
    h: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    h.device("tok-a")
    n = h.notify()
    engine = h.engine(tick=30.0)
    claiming, go_on = threading.Event(), threading.Event()
    claim = engine._claim

    def slow_claim(now: datetime, limit: int) -> Claim:
        claiming.set()
        go_on.wait(5)
        return claim(now, limit)

    monkeypatch.setattr(engine, "_claim", slow_claim)
    h.clock.set(DUE)

    async def scenario() -> None:
        task = engine.start()
        await asyncio.to_thread(claiming.wait, 5)
        # The claim commits shortly after stop() has begun.
        threading.Timer(0.1, go_on.set).start()
        await engine.stop()
        await task
        await asyncio.sleep(0.1)  # let whatever the loop started run its course

    asyncio.run(scenario())

    # Stopped: the delivery is either sent and recorded, or handed back unsent.
    (delivery,) = h.deliveries(n)
    assert delivery.status is not D.IN_FLIGHT
    assert h.gateway.sent == [] or delivery.status is D.DELIVERED

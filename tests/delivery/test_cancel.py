"""Cancelling against the engine: allowed until a delivery is handed to a gateway."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest

from pushcore.domain.errors import NotCancellable
from pushcore.domain.outcomes import Failed
from pushcore.domain.states import DeliveryStatus, NotificationStatus
from pushcore_http.errors import status_for
from tests.delivery.conftest import ALICE, DUE, Harness, at, until

N = NotificationStatus
D = DeliveryStatus


def refused(h: Harness, notification_id: str) -> NotCancellable:
    """Cancel, expecting the 409 not_cancellable refusal; the error raised."""
    with pytest.raises(NotCancellable) as info:
        h.services.notifications.cancel(ALICE, notification_id)
    assert status_for(info.value) == 409
    assert info.value.code == "not_cancellable"
    return info.value


def test_cancel_before_the_due_time_means_nothing_is_ever_sent(h: Harness) -> None:
    h.device("tok-a")
    h.device("tok-b")
    n = h.notify_in(60)
    engine = h.engine()
    h.step(engine, at(30))

    cancelled = h.services.notifications.cancel(ALICE, n.id)

    assert cancelled.status is N.CANCELLED
    assert cancelled.settled_at == at(30)
    assert h.delivery_statuses(n) == [D.CANCELLED, D.CANCELLED]
    assert h.step(engine, at(60)) is None
    h.step(engine, at(3600))
    assert h.gateway.sent == []
    detail = h.get(n)
    assert detail.notification.status is N.CANCELLED
    assert detail.deliveries.pending == 0
    refused(h, n.id)  # cancelled already: 409 too


def test_cancel_of_a_notification_waiting_for_a_device(h: Harness) -> None:
    n = h.notify()
    engine = h.engine()
    h.step(engine, DUE)
    assert h.status(n) is N.SCHEDULED

    assert h.services.notifications.cancel(ALICE, n.id).status is N.CANCELLED

    # A device that shows up now does not revive it, and no wake-up fails it later.
    h.device("tok-a")
    assert h.step(engine, at(60)) is None
    assert h.gateway.sent == []
    h.step(engine, DUE + timedelta(days=2))
    assert h.status(n) is N.CANCELLED


def test_cancel_after_the_claim_is_refused(h: Harness) -> None:
    h.device("tok-a")
    n = h.notify()
    engine = h.engine()
    h.clock.set(DUE)

    async def scenario() -> None:
        h.gateway.hold()
        await engine.tick()
        await until(lambda: h.gateway.waiting == 1)  # the send has started
        refused(h, n.id)
        h.gateway.let_go()
        await engine.drain()

    asyncio.run(scenario())

    assert h.status(n) is N.DELIVERED
    assert h.delivery_statuses(n) == [D.DELIVERED]


def test_cancel_after_a_claim_whose_batch_is_not_sent_yet_is_refused(h: Harness) -> None:
    # The claim transaction is what decides: once it committed, cancel loses.
    h.device("tok-a")
    h.device("tok-b")
    h.device("tok-c")
    n = h.notify()
    lead = timedelta(milliseconds=20)
    # Room for one due and one ahead: it claims two of the three deliveries a lead
    # early and holds them until their due time.
    engine = h.engine(lead=lead, batch_size=1, max_in_flight=1)
    h.clock.set(DUE - lead)

    async def scenario() -> None:
        await engine.tick()
        await until(lambda: DUE in h.clock.sleepers)  # held until its due time
        refused(h, n.id)

    asyncio.run(scenario())
    assert h.gateway.sent == []
    assert sorted(h.delivery_statuses(n)) == [D.IN_FLIGHT, D.IN_FLIGHT, D.PENDING]


def test_cancel_of_a_delivered_notification_is_refused(h: Harness) -> None:
    h.device("tok-a")
    n = h.notify()
    h.step(h.engine(), DUE)
    assert h.status(n) is N.DELIVERED

    error = refused(h, n.id)
    assert "DELIVERED" in error.message
    assert h.status(n) is N.DELIVERED


def test_cancel_of_a_failed_notification_is_refused(h: Harness) -> None:
    h.device("tok-a")
    h.gateway.script("tok-a", Failed("InvalidRegistration"))
    n = h.notify()
    h.step(h.engine(), DUE)

    refused(h, n.id)
    assert h.status(n) is N.FAILED


def test_cancel_of_one_notification_leaves_the_others_alone(h: Harness) -> None:
    h.device("tok-a")
    kept, dropped = h.notify(), h.notify()
    h.services.notifications.cancel(ALICE, dropped.id)

    h.step(h.engine(), DUE)

    assert [s.notification_id for s in h.gateway.sent] == [kept.id]
    assert h.status(kept) is N.DELIVERED
    assert h.status(dropped) is N.CANCELLED

"""NotificationService.cancel: from QUEUED or SCHEDULED, before any delivery is handed over.

Where a rule depends on what the engine did, the engine ``build_engine`` makes
runs against a scripted gateway (``deliveries``), stepped by hand on the fake clock.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from pushcore import Conflict, NotCancellable, NotFound, NotificationStatus, Services
from pushcore.domain.outcomes import Failed, Retry
from tests.services.conftest import ALICE, BOB, DUE, T0, Deliveries, android, notify, stored

N = NotificationStatus


def refused(services: Services, notification_id: str, account: str = ALICE) -> NotCancellable:
    """Cancel, expecting NotCancellable; the error."""
    with pytest.raises(NotCancellable) as info:
        services.notifications.cancel(account, notification_id)
    assert isinstance(info.value, Conflict)
    assert info.value.code == "not_cancellable"
    return info.value


def test_cancel_a_queued_notification(services: Services) -> None:
    android(services, ALICE, "tok-a")
    android(services, ALICE, "tok-b")
    n = notify(services)

    cancelled = services.notifications.cancel(ALICE, n.id)

    assert cancelled.id == n.id
    assert cancelled.status is N.CANCELLED
    assert cancelled.settled_at == T0
    detail = services.notifications.get(ALICE, n.id)
    assert detail.notification == cancelled
    assert detail.notification.status is N.CANCELLED
    assert (detail.deliveries.pending, detail.deliveries.cancelled) == (0, 2)
    assert services.notifications.stats(ALICE).by_status["CANCELLED"] == 1


def test_cancel_twice_is_not_cancellable(services: Services) -> None:
    n = notify(services)
    services.notifications.cancel(ALICE, n.id)

    error = refused(services, n.id)

    assert error.message == "Notification is CANCELLED and can no longer be cancelled"


def test_another_accounts_notification_is_not_found_and_stays_queued(
    services: Services,
) -> None:
    n = notify(services, ALICE)

    with pytest.raises(NotFound):
        services.notifications.cancel(BOB, n.id)
    with pytest.raises(NotFound):
        services.notifications.cancel(ALICE, "ntf_01JD0000000000000000000000")

    assert stored(services, n).status is N.QUEUED


def test_nothing_is_sent_for_a_notification_cancelled_before_its_due_time(
    services: Services, deliveries: Deliveries
) -> None:
    android(services, ALICE, "tok-a")
    n = notify(services)
    services.notifications.cancel(ALICE, n.id)

    deliveries.run(DUE)
    deliveries.run(DUE + timedelta(hours=1))

    assert deliveries.gateway.sent == []
    assert stored(services, n).status is N.CANCELLED


def test_a_device_registered_after_the_cancel_does_not_revive_it(services: Services) -> None:
    n = notify(services)  # no device yet
    services.notifications.cancel(ALICE, n.id)

    android(services, ALICE, "tok-a")

    got = services.notifications.get(ALICE, n.id)
    assert got.notification.status is N.CANCELLED
    assert got.notification.devices_targeted == 0
    assert got.deliveries.pending == 0


def test_cancel_a_scheduled_notification_waiting_for_a_device(
    services: Services, deliveries: Deliveries
) -> None:
    n = notify(services)
    deliveries.run(DUE)
    assert stored(services, n).status is N.SCHEDULED

    assert services.notifications.cancel(ALICE, n.id).status is N.CANCELLED

    # Neither a device that turns up nor the end of the wait changes that.
    android(services, ALICE, "tok-a")
    deliveries.run(DUE + timedelta(days=2))
    assert stored(services, n).status is N.CANCELLED
    assert deliveries.gateway.sent == []


def test_a_delivered_notification_is_not_cancellable(
    services: Services, deliveries: Deliveries
) -> None:
    android(services, ALICE, "tok-a")
    n = notify(services)
    deliveries.run(DUE)
    assert stored(services, n).status is N.DELIVERED

    error = refused(services, n.id)

    assert error.message == "Notification is DELIVERED and can no longer be cancelled"
    assert stored(services, n).status is N.DELIVERED


def test_a_failed_notification_is_not_cancellable(
    services: Services, deliveries: Deliveries
) -> None:
    android(services, ALICE, "tok-a")
    deliveries.gateway.script("tok-a", Failed("InvalidRegistration"))
    n = notify(services)
    deliveries.run(DUE)
    assert stored(services, n).status is N.FAILED

    refused(services, n.id)


def test_queued_but_already_handed_to_a_gateway_is_not_cancellable(
    services: Services, deliveries: Deliveries
) -> None:
    # The gateway asked for a retry: the notification is still QUEUED, with
    # its delivery pending again, but one attempt has reached the gateway.
    android(services, ALICE, "tok-a")
    deliveries.gateway.script("tok-a", Retry("Service Unavailable"))
    n = notify(services)
    deliveries.run(DUE)
    detail = services.notifications.get(ALICE, n.id)
    assert (detail.notification.status, detail.deliveries.pending) == (N.QUEUED, 1)

    error = refused(services, n.id)

    assert error.message == "Notification is already being delivered and can no longer be cancelled"
    assert stored(services, n).status is N.QUEUED

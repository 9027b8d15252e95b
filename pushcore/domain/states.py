"""Notification and delivery state machines as transition tables.

A transition not in the table raises :class:`IllegalTransition`; services
turn that into the conflict the caller should see.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping

from pushcore.domain.errors import IllegalTransition


class NotificationStatus(enum.StrEnum):
    """A notification's status as the API shows it (the aggregate of its deliveries)."""

    SCHEDULED = "SCHEDULED"
    QUEUED = "QUEUED"
    DELIVERED = "DELIVERED"
    FAILED = "FAILED"
    CANCELLED = "CANCELLED"


class NotificationEvent(enum.StrEnum):
    """What can happen to a notification."""

    NO_DEVICES = "no_devices"  # due, but no active target device: wait for one
    DEVICE_REGISTERED = "device_registered"  # a waiting notification found a device
    SETTLED_DELIVERED = "settled_delivered"  # every delivery settled, one or more succeeded
    SETTLED_FAILED = "settled_failed"  # every delivery settled, all failed
    WAIT_EXPIRED = "wait_expired"  # no device came within the grace period
    CANCEL = "cancel"


class DeliveryStatus(enum.StrEnum):
    """Where one delivery to one device stands."""

    PENDING = "PENDING"  # waiting for its due time (or its next attempt)
    IN_FLIGHT = "IN_FLIGHT"  # claimed under a lease and handed to a gateway
    DELIVERED = "DELIVERED"
    FAILED = "FAILED"
    CANCELLED = "CANCELLED"
    EXPIRED = "EXPIRED"  # not made by the notification's expiresAt
    WITHDRAWN = "WITHDRAWN"  # delivered, then its withdrawal was sent
    HELD = "HELD"  # inside the recipient's quiet hours or snooze: waits for held_until


class DeliveryEvent(enum.StrEnum):
    """What can happen to a delivery."""

    CLAIM = "claim"
    SUCCEED = "succeed"
    FAIL = "fail"
    RETRY = "retry"  # back to PENDING with a later due time
    RELEASE = "release"  # handed back unsent (shutdown) or its lease ran out
    CANCEL = "cancel"
    HOLD = "hold"  # claimed inside quiet hours: waits, unsent, until they end


N = NotificationStatus
NE = NotificationEvent
D = DeliveryStatus
DE = DeliveryEvent

NOTIFICATION_TRANSITIONS: Mapping[
    tuple[NotificationStatus, NotificationEvent], NotificationStatus
] = {
    (N.QUEUED, NE.NO_DEVICES): N.SCHEDULED,
    (N.SCHEDULED, NE.DEVICE_REGISTERED): N.QUEUED,
    (N.SCHEDULED, NE.WAIT_EXPIRED): N.FAILED,
    (N.QUEUED, NE.SETTLED_DELIVERED): N.DELIVERED,
    (N.QUEUED, NE.SETTLED_FAILED): N.FAILED,
    (N.QUEUED, NE.CANCEL): N.CANCELLED,
    (N.SCHEDULED, NE.CANCEL): N.CANCELLED,
}

DELIVERY_TRANSITIONS: Mapping[tuple[DeliveryStatus, DeliveryEvent], DeliveryStatus] = {
    (D.PENDING, DE.CLAIM): D.IN_FLIGHT,
    (D.PENDING, DE.CANCEL): D.CANCELLED,
    (D.IN_FLIGHT, DE.SUCCEED): D.DELIVERED,
    (D.IN_FLIGHT, DE.FAIL): D.FAILED,
    (D.IN_FLIGHT, DE.RETRY): D.PENDING,
    (D.IN_FLIGHT, DE.RELEASE): D.PENDING,
    (D.IN_FLIGHT, DE.HOLD): D.HELD,
    (D.HELD, DE.CLAIM): D.IN_FLIGHT,
    (D.HELD, DE.RELEASE): D.PENDING,
    (D.HELD, DE.CANCEL): D.CANCELLED,
}

TERMINAL_NOTIFICATION = frozenset({N.DELIVERED, N.FAILED, N.CANCELLED})


def next_notification_status(
    status: NotificationStatus, event: NotificationEvent
) -> NotificationStatus:
    """The status after ``event``; raises IllegalTransition when the table has none."""
    try:
        return NOTIFICATION_TRANSITIONS[(status, event)]
    except KeyError:
        raise IllegalTransition(f"notification cannot {event.value} from {status.value}") from None


def next_delivery_status(status: DeliveryStatus, event: DeliveryEvent) -> DeliveryStatus:
    """The status after ``event``; raises IllegalTransition when the table has none."""
    try:
        return DELIVERY_TRANSITIONS[(status, event)]
    except KeyError:
        raise IllegalTransition(f"delivery cannot {event.value} from {status.value}") from None


def settled_event(delivered: int, failed: int, open_count: int) -> NotificationEvent | None:
    """The event that settles a queued notification, or None while deliveries are open.

    ``open_count`` counts PENDING and IN_FLIGHT deliveries; cancelled ones count
    as neither success nor failure.
    """
    if open_count > 0 or delivered + failed == 0:
        return None
    return NE.SETTLED_DELIVERED if delivered > 0 else NE.SETTLED_FAILED

"""How a notification's status follows its deliveries (the aggregate of API.md)."""

from __future__ import annotations

from datetime import datetime

import attrs

from pushcore.domain.expiry import EXPIRED
from pushcore.domain.model import DeliveryCounts, Notification
from pushcore.domain.scheduling import NO_DEVICE_GRACE
from pushcore.domain.states import (
    TERMINAL_NOTIFICATION,
    NotificationEvent,
    NotificationStatus,
    next_notification_status,
    settled_event,
)

N = NotificationStatus
NE = NotificationEvent
NO_DEVICES = "no_devices"


def _to(n: Notification, *events: NotificationEvent) -> NotificationStatus:
    status = n.status
    for event in events:
        status = next_notification_status(status, event)
    return status


def reconciled(
    n: Notification, counts: DeliveryCounts, now: datetime, failure_reason: str | None = None
) -> Notification:
    """``n`` with the status, wake time and failure reason its deliveries imply at ``now``.

    - open deliveries: QUEUED (a waiting notification that got a device is queued again);
    - all settled: DELIVERED if one succeeded, else FAILED;
    - while any delivery has failed, ``failure_reason`` (the latest) is kept;
    - none at all: a stream send fails at once; a notification not yet due stays
      QUEUED and wakes at its due time; a due one waits (SCHEDULED) for a device
      until the grace period ends, then fails with ``no_devices``.
    """
    if n.status in TERMINAL_NOTIFICATION:
        return n
    # A delivery's failure reason is kept on the notification even when others
    # succeed (or are still open), so "delivered, 1 failed" can say why.
    reason = (failure_reason or n.failure_reason) if counts.failed else None
    if counts.pending:
        status = _to(n, NE.DEVICE_REGISTERED) if n.status is N.SCHEDULED else n.status
        return attrs.evolve(n, status=status, wake_at=None, failure_reason=reason)
    event = settled_event(counts.delivered, counts.failed, counts.pending)
    if event is not None:
        status = _to(n, NE.DEVICE_REGISTERED, event) if n.status is N.SCHEDULED else _to(n, event)
        return attrs.evolve(n, status=status, wake_at=None, settled_at=now, failure_reason=reason)
    if n.stream is not None:
        failed = _to(n, NE.SETTLED_FAILED)
        return attrs.evolve(
            n, status=failed, wake_at=None, settled_at=now, failure_reason=NO_DEVICES
        )
    if now < n.scheduled_at:
        # Not due yet: targets are resolved at the due time, so just look again then.
        status = _to(n, NE.DEVICE_REGISTERED) if n.status is N.SCHEDULED else n.status
        return attrs.evolve(n, status=status, wake_at=n.scheduled_at)
    waiting = n.status if n.status is N.SCHEDULED else _to(n, NE.NO_DEVICES)
    deadline, reason = n.scheduled_at + NO_DEVICE_GRACE, NO_DEVICES
    if n.expires_at is not None and n.expires_at < deadline:
        # It expires before the wait would end: no device may get it after that.
        deadline, reason = n.expires_at, EXPIRED
    if now >= deadline:
        failed = next_notification_status(waiting, NE.WAIT_EXPIRED)
        return attrs.evolve(n, status=failed, wake_at=None, settled_at=now, failure_reason=reason)
    return attrs.evolve(n, status=waiting, wake_at=deadline)

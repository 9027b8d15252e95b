"""Keeping notifications and their deliveries consistent, inside one transaction.

Used by the services (create, cancel, device registration and removal) and
by the delivery engine (outcomes, wake-ups), so that every path applies the
same rules from :mod:`pushcore.domain.lifecycle`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime

import attrs

from pushcore.domain.lifecycle import reconciled
from pushcore.domain.model import Delivery, DeliveryCounts, Device, Notification
from pushcore.domain.states import DeliveryStatus, NotificationStatus
from pushcore.events import record_events, settled_changes
from pushcore.ports import IdGenerator, Transaction


def new_deliveries(
    ids: IdGenerator, notification: Notification, devices: Sequence[Device], due_at: datetime
) -> list[Delivery]:
    """One PENDING delivery per device."""
    return [
        Delivery(
            id=ids.new_id("dlv"),
            notification_id=notification.id,
            account_id=notification.account_id,
            device_id=device.id,
            status=DeliveryStatus.PENDING,
            due_at=due_at,
        )
        for device in devices
    ]


def reconcile(
    tx: Transaction,
    notifications: Iterable[Notification],
    now: datetime,
    failure_reasons: Mapping[str, str] | None = None,
    *,
    locked: bool = False,
) -> list[Notification]:
    """Store each notification's status as its deliveries now imply; the changed ones.
    ``locked``: the caller read them locked in this transaction (refresh(for_update=True))."""
    candidates = list(notifications)
    # The status is decided on the deliveries read below: two workers settling
    # the last two deliveries of one notification must not both see the
    # other's as still open. (Taken again, a lock held is free, but the statement
    # is not: a roll-up's, already locked, skips it.)
    if not locked:
        tx.locks.notifications([n.id for n in candidates])
    # Still going (a queued notification with an open delivery): nothing to
    # change, and counting a large fan-out's deliveries after every batch
    # would cost more than the batch. One cheap query answers for all.
    maybe_open = [
        n.id for n in candidates if n.status is NotificationStatus.QUEUED and n.wake_at is None
    ]
    still_open = tx.progress.open_among(maybe_open) if maybe_open else set()
    settling = [n for n in candidates if n.id not in still_open]
    counts = tx.progress.counts_many([n.id for n in settling]) if settling else {}
    changed: list[Notification] = []
    for notification in settling:
        reason = (failure_reasons or {}).get(notification.id)
        found = counts.get(notification.id, DeliveryCounts())
        updated = reconciled(notification, found, now, reason)
        if updated.status is NotificationStatus.FAILED and updated.failure_reason is None:
            # Settled by something other than a gateway answer (a device removed
            # or found dead elsewhere): the reason is that of its last failure.
            failed = [
                d
                for d in tx.progress.for_notification(notification.id)
                if d.status is DeliveryStatus.FAILED and d.failure_reason
            ]
            if failed:
                last = max(failed, key=lambda d: (d.settled_at or now, d.id))
                updated = attrs.evolve(updated, failure_reason=last.failure_reason)
        if updated != notification:
            changed.append(updated)
    if changed:
        # Read locked by the caller: as stored now, so the counts need no read again.
        tx.notifications.update_many(changed, settling if locked else ())
        # notification.delivered / .failed, in this transaction (the outbox).
        record_events(tx, settled_changes({n.id: n.status for n in settling}, changed), now)
    return changed


def attach_device(
    tx: Transaction, ids: IdGenerator, device: Device, now: datetime
) -> datetime | None:
    """Give a new or reactivated device the notifications it should also get.

    Targets are resolved at the due time (API.md), so a device that appears
    before a notification is due, or while a due one waits for a device, gets
    a delivery too. Returns the earliest due time added, to wake the engine.
    """
    earliest: datetime | None = None
    for notification in tx.notifications.waiting_for(
        device.account_id, device.token, now, for_update=True
    ):
        live = [
            d
            for d in tx.progress.for_notification(notification.id)
            if d.device_id == device.id and d.status is not DeliveryStatus.CANCELLED
        ]
        if live:
            continue
        due_at = max(notification.scheduled_at, now)
        tx.schedule.add_many(new_deliveries(ids, notification, [device], due_at))
        grown = attrs.evolve(notification, devices_targeted=notification.devices_targeted + 1)
        tx.notifications.update(grown)
        reconcile(tx, [grown], now)
        earliest = due_at if earliest is None else min(earliest, due_at)
    return earliest


def detach_device(tx: Transaction, device_id: str, now: datetime, reason: str) -> None:
    """Cancel a removed or dead device's pending deliveries and settle what that settles."""
    touched = tx.schedule.cancel_for_device(device_id, reason)
    if touched:
        reconcile(tx, tx.notifications.by_ids(touched), now)

"""In-memory notifications and deliveries, with the SQLite store's semantics."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING

import attrs

from pushcore.domain.model import (
    Delivery,
    DeliveryCounts,
    Notification,
    NotificationStats,
    QueueDepth,
)
from pushcore.domain.states import DeliveryStatus, NotificationStatus

if TYPE_CHECKING:
    from pushcore.storage.memory import _Tables

D = DeliveryStatus


def _ms(at: datetime) -> datetime:
    # The SQL stores keep milliseconds; so does this one, so the contract is one.
    return at.replace(microsecond=at.microsecond // 1000 * 1000)


def delivery_counts(deliveries: Sequence[Delivery]) -> DeliveryCounts:
    """Counts of ``deliveries`` by status."""
    by = dict.fromkeys(DeliveryStatus, 0)
    for d in deliveries:
        by[d.status] += 1
    return DeliveryCounts(
        pending=by[D.PENDING] + by[D.IN_FLIGHT],
        delivered=by[D.DELIVERED],
        failed=by[D.FAILED],
        cancelled=by[D.CANCELLED],
        handed=sum(1 for d in deliveries if d.attempts > 0),
    )


class Notifications:
    def __init__(self, t: _Tables) -> None:
        self._t = t

    def add(self, notification: Notification) -> None:
        if notification.id in self._t.notifications:
            raise KeyError(notification.id)
        self._t.notifications[notification.id] = notification

    def get(self, account_id: str, notification_id: str) -> Notification | None:
        found = self._t.notifications.get(notification_id)
        return found if found is not None and found.account_id == account_id else None

    def by_ids(self, notification_ids: Sequence[str]) -> Sequence[Notification]:
        return [self._t.notifications[i] for i in notification_ids if i in self._t.notifications]

    def list(
        self,
        account_id: str,
        status: NotificationStatus | None,
        limit: int,
        before_id: str | None,
    ) -> Sequence[Notification]:
        found = [
            n
            for n in self._t.notifications.values()
            if n.account_id == account_id
            and (status is None or n.status is status)
            and (before_id is None or n.id < before_id)
        ]
        return sorted(found, key=lambda n: n.id, reverse=True)[:limit]

    def update(self, notification: Notification) -> None:
        if notification.id in self._t.notifications:
            self._t.notifications[notification.id] = notification

    def update_many(self, notifications: Sequence[Notification]) -> None:
        for notification in notifications:
            self.update(notification)

    def refresh(self, notifications: Sequence[Notification]) -> Sequence[Notification]:
        # Like SQL, only the changeable state is read back: the rest of each
        # object is the caller's own (nothing else changes after creation).
        stored = self._t.notifications
        return [
            attrs.evolve(
                n,
                status=now.status,
                failure_reason=now.failure_reason,
                wake_at=now.wake_at,
                settled_at=now.settled_at,
                devices_targeted=now.devices_targeted,
            )
            for n in notifications
            if (now := stored.get(n.id)) is not None
        ]

    def waiting_for(self, account_id: str, token: str, now: datetime) -> Sequence[Notification]:
        return [
            n
            for n in self._t.notifications.values()
            if n.account_id == account_id
            and n.stream is None
            and n.target_device_token in (None, token)
            and (
                n.status is NotificationStatus.SCHEDULED
                or (n.status is NotificationStatus.QUEUED and n.scheduled_at > now)
            )
        ]

    def due_wakeups(self, now: datetime, limit: int) -> Sequence[Notification]:
        due = [
            n for n in self._t.notifications.values() if n.wake_at is not None and n.wake_at <= now
        ]
        return sorted(due, key=lambda n: (n.wake_at, n.id))[:limit]

    def next_wake_at(self) -> datetime | None:
        times = [n.wake_at for n in self._t.notifications.values() if n.wake_at is not None]
        return min(times, default=None)

    def stats(self, account_id: str, since: datetime) -> NotificationStats:
        mine = [n for n in self._t.notifications.values() if n.account_id == account_id]
        by_status = {s.value: 0 for s in NotificationStatus}
        for n in mine:
            by_status[n.status.value] += 1
        deliveries = [d for d in self._t.deliveries.values() if d.account_id == account_id]

        def settled(status: NotificationStatus) -> int:
            return sum(
                1
                for n in mine
                if n.status is status and n.settled_at is not None and n.settled_at >= since
            )

        counts = attrs.evolve(delivery_counts(deliveries), handed=0)
        return NotificationStats(
            by_status,
            counts,
            sum(1 for n in mine if n.created_at >= since),
            settled(NotificationStatus.DELIVERED),
            settled(NotificationStatus.FAILED),
        )


class Deliveries:
    def __init__(self, t: _Tables) -> None:
        self._t = t

    def _set(self, delivery: Delivery, **changes: object) -> Delivery:
        updated = attrs.evolve(delivery, **changes)  # type: ignore[arg-type]
        self._t.deliveries[delivery.id] = updated
        return updated

    def add_many(self, deliveries: Sequence[Delivery]) -> None:
        for d in deliveries:
            if d.id in self._t.deliveries:
                raise KeyError(d.id)
        for d in deliveries:
            self._t.deliveries[d.id] = d

    def _of(self, notification_id: str) -> list[Delivery]:
        return [d for d in self._t.deliveries.values() if d.notification_id == notification_id]

    def counts(self, notification_id: str) -> DeliveryCounts:
        return delivery_counts(self._of(notification_id))

    def fan_out(self, notification: Notification, stream_id: str, due_at: datetime) -> int:
        accounts = {
            s.account_id for s in self._t.subscriptions.values() if s.stream_id == stream_id
        }
        devices = [d for d in self._t.devices.values() if d.account_id in accounts and d.is_active]
        self.add_many(
            [
                Delivery(
                    id=f"dlv_{notification.id[4:]}_{device.id[4:]}",
                    notification_id=notification.id,
                    account_id=notification.account_id,
                    device_id=device.id,
                    status=D.PENDING,
                    due_at=_ms(due_at),
                )
                for device in devices
            ]
        )
        return len(devices)

    def has_open(self, notification_id: str) -> bool:
        return any(d.status in (D.PENDING, D.IN_FLIGHT) for d in self._of(notification_id))

    def open_among(self, notification_ids: Sequence[str]) -> set[str]:
        return {n for n in notification_ids if self.has_open(n)}

    def counts_many(self, notification_ids: Sequence[str]) -> dict[str, DeliveryCounts]:
        return {n: self.counts(n) for n in set(notification_ids) if self._of(n)}

    def for_notification(self, notification_id: str) -> Sequence[Delivery]:
        return sorted(self._of(notification_id), key=lambda d: d.id)

    def queue_depth(self, now: datetime) -> QueueDepth:
        pending = [d.due_at for d in self._t.deliveries.values() if d.status is D.PENDING]
        return QueueDepth(
            pending=len(pending),
            due=sum(1 for at in pending if at <= now),
            in_flight=sum(1 for d in self._t.deliveries.values() if d.status is D.IN_FLIGHT),
            oldest_due_at=min(pending, default=None),
        )

    def claim_due(
        self, now: datetime, owner: str, lease_until: datetime, limit: int
    ) -> Sequence[Delivery]:
        values = self._t.deliveries.values()
        expired = sorted(
            (
                d
                for d in values
                if d.status is D.IN_FLIGHT
                and d.lease_expires_at is not None
                and d.lease_expires_at <= now
            ),
            key=lambda d: (d.lease_expires_at, d.id),
        )
        due = sorted(
            (d for d in values if d.status is D.PENDING and d.due_at <= now),
            key=lambda d: (d.due_at, d.id),
        )
        chosen = (expired + due)[:limit]
        claimed = [
            self._set(
                d,
                status=D.IN_FLIGHT,
                lease_owner=owner,
                lease_expires_at=_ms(lease_until),
                attempts=d.attempts + 1,
            )
            for d in chosen
        ]
        return sorted(claimed, key=lambda d: (d.due_at, d.id))

    def next_due_at(self) -> datetime | None:
        times = [
            d.due_at if d.status is D.PENDING else d.lease_expires_at
            for d in self._t.deliveries.values()
            if d.status in (D.PENDING, D.IN_FLIGHT)
        ]
        return min((t for t in times if t is not None), default=None)

    def _leased(self, delivery_id: str, owner: str) -> Delivery | None:
        d = self._t.deliveries.get(delivery_id)
        if d is None or d.status is not D.IN_FLIGHT or d.lease_owner != owner:
            return None
        return d

    def settle(
        self,
        delivery_id: str,
        owner: str,
        status: DeliveryStatus,
        reason: str | None,
        at: datetime,
    ) -> bool:
        d = self._leased(delivery_id, owner)
        if d is None:
            return False
        self._set(
            d,
            status=status,
            failure_reason=reason,
            settled_at=_ms(at),
            lease_owner=None,
            lease_expires_at=None,
        )
        return True

    def settle_many(
        self,
        delivery_ids: Sequence[str],
        owner: str,
        status: DeliveryStatus,
        reason: str | None,
        at: datetime,
    ) -> set[str]:
        return {i for i in delivery_ids if self.settle(i, owner, status, reason, at)}

    def retry(self, delivery_id: str, owner: str, due_at: datetime, reason: str) -> bool:
        d = self._leased(delivery_id, owner)
        if d is None:
            return False
        self._set(
            d,
            status=D.PENDING,
            due_at=_ms(due_at),
            failure_reason=reason,
            lease_owner=None,
            lease_expires_at=None,
        )
        return True

    def release(self, delivery_ids: Sequence[str], owner: str) -> int:
        released = 0
        for delivery_id in delivery_ids:
            d = self._leased(delivery_id, owner)
            if d is not None:
                self._set(
                    d,
                    status=D.PENDING,
                    attempts=d.attempts - 1,
                    lease_owner=None,
                    lease_expires_at=None,
                )
                released += 1
        return released

    def cancel_unsent(self, notification_id: str, reason: str) -> int:
        chosen = [d for d in self._of(notification_id) if d.status is D.PENDING and d.attempts == 0]
        for d in chosen:
            self._set(d, status=D.CANCELLED, failure_reason=reason)
        return len(chosen)

    def cancel_for_device(self, device_id: str, reason: str) -> Sequence[str]:
        chosen = [
            d
            for d in self._t.deliveries.values()
            if d.device_id == device_id and d.status is D.PENDING
        ]
        for d in chosen:
            self._set(d, status=D.CANCELLED, failure_reason=reason)
        return sorted({d.notification_id for d in chosen})

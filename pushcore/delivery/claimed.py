"""What a claim does with the deliveries it leased: read what sending them needs, then
write what that decided (Ledger.claim's second and third steps).

The lease is taken first, in a write transaction of its own that only marks the rows
(storage/sql/queue.py). It is what orders the claim against a PATCH or a cancel: both
refuse a notification with a delivery handed (attempts > 0), so what is read after the
lease is the revision that goes out. The reads here (notifications, devices, the
recipients' settings) then take no write lock: on SQLite the one writer, on PostgreSQL
the claimed rows, are held only for the short writes, and a record of answers waits
for one of them at most (API.md, "Limits and fairness": 100 ms).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from datetime import datetime

import attrs

from pushcore.consistency import reconcile
from pushcore.delivery.quiet import Screened, apply_screen, screen
from pushcore.domain.expiry import EXPIRED, has_expired
from pushcore.domain.model import Delivery, Device, Notification
from pushcore.domain.outcomes import Dispatch, is_redelivery
from pushcore.domain.receipts import receipt_token
from pushcore.domain.states import DeliveryStatus
from pushcore.domain.withdraw import is_withdrawal, settled_as
from pushcore.events import expired_change, record_events
from pushcore.ports import Transaction


@attrs.frozen
class Sorted:
    """The claimed deliveries sorted out by the reads: what goes out, and what the
    claim's last write transaction stores."""

    send: list[Dispatch]
    # Ended unsent: the delivery, its device (None: removed), status and reason.
    ended: list[tuple[Delivery, Device | None, DeliveryStatus, str]]
    orphaned: dict[str, str]  # notification id -> why its deliveries ended
    screened: Screened
    due: list[str]  # the notifications whose owners' inbox entries fall due now
    keyed: list[Notification]  # those of them with a collapse key
    local: list[str]  # deliveries of local-time stream sends (their subscribers' entries)
    redelivered: int

    @property
    def writes(self) -> bool:
        """Whether anything is left to write."""
        return bool(self.ended or self.orphaned or self.screened.writes or self.due or self.local)


def sort_claimed(
    tx: Transaction,
    deliveries: Sequence[Delivery],
    held: Collection[str],
    now: datetime,
    key: bytes,
) -> Sorted:
    """Read the claimed deliveries' notifications, devices and recipients' settings
    (``tx`` only reads); decide each."""
    if not deliveries:
        return Sorted([], [], {}, Screened([], {}), [], [], [], 0)  # an idle tick reads nothing
    notification_ids = sorted({d.notification_id for d in deliveries})
    device_ids = sorted({d.device_id for d in deliveries})
    notifications = {n.id: n for n in tx.notifications.by_ids(notification_ids)}
    devices = {d.id: d for d in tx.devices.by_ids(device_ids)}
    dispatches: list[Dispatch] = []
    ended: list[tuple[Delivery, Device | None, DeliveryStatus, str]] = []
    orphaned: dict[str, str] = {}
    redelivered = 0
    for delivery in deliveries:
        if delivery.id in held:
            # Its lease ran out while this process could not renew it (the
            # database was away) and its answer is still to be recorded:
            # the claim only renewed the lease; it is not sent again.
            continue
        notification = notifications.get(delivery.notification_id)
        device = devices.get(delivery.device_id)
        status = settled_as(delivery, DeliveryStatus.FAILED)
        if notification is not None and _expired(delivery, notification, now):
            # Past its expiresAt (waiting for its time, a device or a retry):
            # not made, and never handed to a gateway.
            status, reason = DeliveryStatus.EXPIRED, EXPIRED
        elif notification is not None and device is not None and device.is_active:
            receipt = receipt_token(key, delivery.id)
            dispatches.append(Dispatch(delivery, device, notification, receipt))
            redelivered += is_redelivery(delivery)
            continue
        else:
            # The device went away between scheduling and now: nothing to send.
            reason = "Device inactive" if device is not None else "Device removed"
        ended.append((delivery, device, status, reason))
        orphaned[delivery.notification_id] = reason
    # The recipients' quiet hours, snoozes and mutes (delivery/quiet.py).
    screened = screen(tx, dispatches, now)
    orphaned.update(screened.ended)
    # A claimed delivery's notification is due by the claim's lead: its owner's
    # entry goes in now. Stream sends were put in their subscribers' inboxes
    # when sent (StreamService.send), but a local-time one's entry waits for
    # the first of its deliveries there to fall due.
    due = sorted(n.id for n in notifications.values() if n.stream is None)
    local = [d.id for d in deliveries if _local_stream(notifications, d)]
    # A local-time stream send's entries come person by person: each replaces that
    # person's older entry with its collapse key when it comes (replace_older skips
    # the people already done).
    local_sends = sorted({d.notification_id for d in deliveries if d.id in set(local)})
    keyed = [notifications[i] for i in [*due, *local_sends] if notifications[i].collapse_key]
    return Sorted(screened.send, ended, orphaned, screened, due, keyed, local, redelivered)


def write_claimed(tx: Transaction, found: Sorted, owner: str, now: datetime) -> int:
    """Store what :func:`sort_claimed` decided; how many inbox entries were made."""
    for delivery, device, status, reason in found.ended:
        tx.deliveries.settle(delivery.id, owner, status, reason, now)
        if status is DeliveryStatus.EXPIRED:
            record_events(tx, [expired_change(delivery, device, reason)], now)
    apply_screen(tx, found.screened, owner, now)
    if found.orphaned:
        orphaned = found.orphaned
        reconcile(tx, tx.notifications.by_ids(sorted(orphaned)), now, orphaned)
    return to_inboxes(tx, found.due, found.keyed, found.local, now)


def to_inboxes(
    tx: Transaction,
    due: Sequence[str],
    keyed: Sequence[Notification],
    local: Sequence[str],
    now: datetime,
) -> int:
    """The entries of the notifications ``due`` (their owners') and of the local-time
    deliveries ``local`` (their devices' owners'); how many. Last in a transaction:
    it holds the inbox's turn until COMMIT (storage/sql/inbox.py)."""
    inboxed = tx.inbox.deliver_own(due, now) if due else 0
    inboxed += tx.inbox.deliver_local(local, now) if local else 0
    if inboxed and keyed:
        tx.inbox.replace_older(keyed, now)
    return inboxed


def _expired(delivery: Delivery, notification: Notification, now: datetime) -> bool:
    """Whether a claimed delivery of the notification would arrive past its expiry
    (claimed up to the lead early: it goes at its due time). A withdrawal always goes."""
    at = max(now, delivery.due_at)
    return not is_withdrawal(delivery) and has_expired(notification.expires_at, at)


def _local_stream(notifications: dict[str, Notification], delivery: Delivery) -> bool:
    """Whether ``delivery`` is one of a local-time stream send's (a notification)."""
    n = notifications.get(delivery.notification_id)
    return n is not None and n.stream is not None and n.deliver_at is not None

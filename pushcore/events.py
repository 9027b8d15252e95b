"""The outbox: an event is written in the transaction of the change it reports.

Used by the engine (a notification settled, a delivery failed, a device
deactivated) and by the services, so it sits beside ``consistency.py`` rather
than in either. Whatever commits the change commits its event and one pending
attempt per endpoint subscribed to it; a rolled-back change leaves neither, and
a crash after the commit loses neither (the sender finds the attempts).
Other features add their events with one call: ``record_event(tx, ...)``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

import attrs

from pushcore.domain.events import Event, EventType, matches
from pushcore.domain.model import Delivery, Device, Notification
from pushcore.domain.states import DeliveryStatus, NotificationStatus
from pushcore.ports import Transaction
from pushcore.runtime.system import UlidGenerator, encode_ulid

if TYPE_CHECKING:
    from pushcore.domain.outcomes import Dispatch, Outcome


@attrs.frozen
class Change:
    """What one event says, before it has an id: its account, type, data and subject."""

    account_id: str
    type: EventType
    data: Mapping[str, Any]
    notification_id: str | None = None


# The event log's order (``after``) is the order this process made its events in,
# even within a millisecond: one generator, monotonic across threads and forks.
_ids = UlidGenerator()


def new_event_ids(at: datetime, n: int) -> list[str]:
    """``n`` ids of the time ``at``, in increasing order (one draw of random bits: the
    engine makes an event per settled notification, up to a roll-up chunk's 128)."""
    return ["evt_" + encode_ulid(v) for v in _ids.values_at(int(at.timestamp() * 1000), n)]


def new_event_id(at: datetime) -> str:
    """``evt_`` and a ULID of the given time: ids sort by when their events were made."""
    return new_event_ids(at, 1)[0]


def record_events(tx: Transaction, changes: Iterable[Change], at: datetime) -> list[Event]:
    """Store each change as an event, with a pending attempt for every enabled endpoint of
    its account subscribed to its type, in ``tx``; the events."""
    changes = list(changes)
    if not changes:
        return []
    # Each account's subscriptions, and which endpoints want each type, looked up once.
    endpoints: dict[str, list[tuple[str, tuple[str, ...]]]] = {}
    wanted: dict[tuple[str, str], list[str]] = {}
    added: list[tuple[Event, list[str]]] = []
    for change, event_id in zip(changes, new_event_ids(at, len(changes)), strict=True):
        account, kind = change.account_id, change.type.value
        subscribed = wanted.get((account, kind))
        if subscribed is None:
            if account not in endpoints:
                endpoints[account] = [
                    (e.id, e.events) for e in tx.webhooks.list(account, enabled_only=True)
                ]
            subscribed = [i for i, events in endpoints[account] if matches(events, kind)]
            wanted[account, kind] = subscribed
        data = {"notificationId": change.notification_id}
        data.update(change.data)
        event = Event(
            id=event_id,
            account_id=account,
            type=kind,
            created_at=at,
            data=data,
            notification_id=change.notification_id,
        )
        added.append((event, subscribed))
    # One statement for the lot: a roll-up settles up to 128 notifications, and an
    # insert each cost the engine's outcome records their turn (GIL and round trips).
    tx.events.add(added, at)
    return [event for event, _ in added]


def record_event(
    tx: Transaction,
    account_id: str,
    type: EventType,
    at: datetime,
    *,
    notification_id: str | None = None,
    **data: Any,
) -> Event:
    """Record one event in ``tx`` (see :func:`record_events`); ``data`` is its body's data
    beside ``notificationId`` (``deviceId``, ``status``, ``reason``...)."""
    (event,) = record_events(tx, [Change(account_id, type, data, notification_id)], at)
    return event


_SETTLED = {
    NotificationStatus.DELIVERED: EventType.NOTIFICATION_DELIVERED,
    NotificationStatus.FAILED: EventType.NOTIFICATION_FAILED,
}


def settled_changes(
    before: Mapping[str, NotificationStatus], after: Sequence[Notification]
) -> list[Change]:
    """``notification.delivered`` / ``.failed`` for each notification that has just settled so."""
    changes = []
    for n in after:
        kind = _SETTLED.get(n.status)
        if kind is not None and before.get(n.id) is not n.status:
            data = {"status": n.status.value, "reason": n.failure_reason}
            changes.append(Change(n.account_id, kind, data, n.id))
    return changes


def failure_changes(
    decided: Iterable[tuple[Dispatch, Outcome, DeliveryStatus]], settled: Iterable[str]
) -> list[Change]:
    """``delivery.failed`` for each delivery the engine failed just now, and
    ``device.deactivated`` for each device a gateway's answer deactivated."""
    # The engine's outcomes: only the engine records these (a send loads none of them).
    from pushcore.domain.outcomes import Failed, Retry, TokenInvalid

    done = set(settled)
    changes = []
    for dispatch, outcome, status in decided:
        delivery, device = dispatch.delivery, dispatch.device
        if status is not DeliveryStatus.FAILED or delivery.id not in done:
            continue
        sender, notification_id = delivery.account_id, delivery.notification_id
        # A stream send's subscriber devices are not the sender's to know.
        own = device.account_id == sender
        reason = outcome.reason if isinstance(outcome, Failed | TokenInvalid | Retry) else None
        data = {
            "deliveryId": delivery.id,
            "deviceId": device.id if own else None,
            "status": status.value,
            "reason": reason,
        }
        changes.append(Change(sender, EventType.DELIVERY_FAILED, data, notification_id))
        if isinstance(outcome, TokenInvalid):
            # Told to the device's owner, whoever sent what found it dead.
            gone = {"deviceId": device.id, "status": "deactivated", "reason": reason}
            changes.append(
                Change(
                    device.account_id,
                    EventType.DEVICE_DEACTIVATED,
                    gone,
                    notification_id if own else None,
                )
            )
    return changes


def expired_change(delivery: Delivery, device: Device | None, reason: str) -> Change:
    """``delivery.expired`` for a delivery that passed its notification's expiresAt unsent."""
    own = device is not None and device.account_id == delivery.account_id
    data = {
        "deliveryId": delivery.id,
        "deviceId": delivery.device_id if own else None,
        "status": "EXPIRED",
        "reason": reason,
    }
    return Change(delivery.account_id, EventType.DELIVERY_EXPIRED, data, delivery.notification_id)

"""Collapse keys: a newer notification supersedes the older ones not yet sent.

API.md, "After sending": within one sending account, a newer notification
with the same collapse key replaces the older as soon as it is created. An
older one no gateway has taken yet is CANCELLED with ``failureReason:
"superseded"`` (its deliveries too), in the transaction that creates the
newer; one already taken is replaced where it arrived instead (gateways by
the key, inboxes by storage/sql/inbox_replace.py).

The decision is ordered against the engine's claim exactly as a PATCH is
(services/notifications.py, ``_edit``): each older notification is read
FOR UPDATE, which a claim waits for, and then its deliveries are looked at;
so either no delivery was handed and none ever will be, or one was and the
older stays as it is.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

import attrs

from pushcore.domain.model import Notification
from pushcore.domain.states import NotificationEvent, next_notification_status
from pushcore.ports import Transaction

SUPERSEDED = "superseded"


def supersede_older(tx: Transaction, newer: Notification, now: datetime) -> list[Notification]:
    """Cancel, as superseded, the account's other open notifications with ``newer``'s
    collapse key that no gateway has taken; the notifications cancelled."""
    key = newer.collapse_key
    if key is None:
        return []
    # Two creates with the key at once (PostgreSQL): the later to take this lock sees
    # the earlier, committed, and supersedes it; each would miss the other without it.
    tx.locks.collapse_key(newer.account_id, key)
    superseded: list[Notification] = []
    for older in tx.notifications.open_with_key(newer.account_id, key, newer.id):
        if tx.progress.counts(older.id).handed:
            continue  # taken already: replaced on devices and in inboxes instead
        tx.schedule.cancel_unsent(older.id, SUPERSEDED)
        cancelled = attrs.evolve(
            older,
            status=next_notification_status(older.status, NotificationEvent.CANCEL),
            failure_reason=SUPERSEDED,
            wake_at=None,
            settled_at=now,
        )
        tx.notifications.update(cancelled)
        superseded.append(cancelled)
    return superseded


def supersede_in_batch(
    tx: Transaction, created: Sequence[Notification], now: datetime
) -> list[Notification]:
    """:func:`supersede_older` for a batch stored at once: the last item with a key
    supersedes the earlier ones (of the batch or not); ``created`` as it now stands."""
    last = {n.collapse_key: n for n in created if n.collapse_key is not None}
    cancelled: dict[str, Notification] = {}
    # In key order: two batches take their keys' locks in one order, and cannot deadlock.
    for _, newest in sorted(last.items()):
        cancelled |= {n.id: n for n in supersede_older(tx, newest, now)}
    return [cancelled.get(n.id, n) for n in created]

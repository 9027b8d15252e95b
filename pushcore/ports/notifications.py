"""Store ports of notifications and of how their deliveries stand.

Raises, besides what a docstring says: the database's own errors when it
fails, ValueError for a naive datetime. ``for_update=True`` marks a read the
transaction goes on to decide on: the store locks what it read until the
transaction ends (PostgreSQL: row locks; SQLite: nothing, its one writer at a
time already excludes others). It is ignored in :meth:`Store.read`.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Protocol

from pushcore.domain.model import Delivery, DeliveryCounts, Notification, NotificationStats
from pushcore.domain.states import NotificationStatus


class NotificationRepository(Protocol):
    """Notifications. Reads by the API are scoped by account; the engine's are not."""

    def add(self, notification: Notification) -> None:
        """Insert a new notification; KeyError when its id is taken."""
        ...

    def add_many(self, notifications: Sequence[Notification]) -> None:
        """Insert new notifications at once, all or none; KeyError when an id is taken."""
        ...

    def get(
        self, account_id: str, notification_id: str, *, for_update: bool = False
    ) -> Notification | None:
        """The notification with this id in this account, or None.

        ``for_update``: locked exclusively, so that claims of its deliveries
        wait or keep off until the transaction ends (a cancel decides on it).
        """
        ...

    def lock_for_edit(self, notification_ids: Sequence[str]) -> None:
        """In a group commit (the writer's ``prepare`` of its edits): lock these
        notifications as ``get(for_update=True)`` does, all at once, and read their
        delivery counts after the locks, for :meth:`editable` to return."""
        ...

    def editable(
        self, account_id: str, notification_id: str
    ) -> tuple[Notification | None, DeliveryCounts]:
        """The notification locked as ``get(for_update=True)`` locks it (None: none in
        this account) and its delivery counts: what :meth:`lock_for_edit` read while
        nothing else was written since, else read now."""
        ...

    def by_ids(self, notification_ids: Sequence[str]) -> Sequence[Notification]:
        """The notifications with these ids (any account; for the engine), in id order."""
        ...

    def list(
        self,
        account_id: str,
        status: NotificationStatus | None,
        limit: int,
        before_id: str | None,
        collapse_key: str | None = None,
        stream_id: str | None = None,
        schedule_id: str | None = None,
    ) -> Sequence[Notification]:
        """The account's notifications, newest first, optionally of one status (and
        collapse key, stream, schedule), with ids below ``before_id`` (the paging cursor)."""
        ...

    def open_with_key(
        self, account_id: str, collapse_key: str, newer_id: str
    ) -> Sequence[Notification]:
        """The account's QUEUED or SCHEDULED notifications with this collapse key other
        than ``newer_id``, locked FOR UPDATE (a claim waits for them), in id order."""
        ...

    def update(self, notification: Notification) -> None:
        """Store the changed state (status, failure_reason, wake_at, settled_at)."""
        ...

    def edit(self, notification: Notification) -> None:
        """Store an edited notification's content, timing, targets and revision."""
        ...

    def update_many(
        self, notifications: Sequence[Notification], stored: Sequence[Notification] = ()
    ) -> None:
        """:meth:`update` of several notifications at once; ``stored``: each of them as
        this transaction read it locked (:meth:`refresh` with ``for_update``), when the
        caller has that: their counts then change without reading them again."""
        ...

    def refresh(
        self, notifications: Sequence[Notification], *, for_update: bool = False
    ) -> Sequence[Notification]:
        """These notifications with their changeable state (status, failure_reason,
        wake_at, settled_at, devices_targeted) as stored now; deleted ones left out.

        Cheaper than :meth:`by_ids` for objects already in hand: the engine
        reads back what it claimed without decoding every column again.
        ``for_update``: locked in id order, as :meth:`Locks.notifications` does,
        before they are read (two workers settling the last two deliveries of
        one notification then reconcile it one after the other).
        """
        ...

    def waiting_for(
        self, account_id: str, token: str, now: datetime, *, for_update: bool = False
    ) -> Sequence[Notification]:
        """Notifications a new or reactivated device with ``token`` should also get.

        Those SCHEDULED (waiting for a device), and those QUEUED and not yet
        due (their targets are resolved at the due time), that target all
        devices or this token. ``for_update``: locked in id order.
        """
        ...

    def due_wakeups(self, now: datetime, limit: int) -> Sequence[Notification]:
        """Notifications whose ``wake_at`` has come, earliest first.

        A claim: in a write transaction they stay locked to it, and those another
        writer holds are passed over, so two schedulers never wake the same one.
        """
        ...

    def next_wake_at(self) -> datetime | None:
        """The earliest ``wake_at``, or None."""
        ...

    def stats(self, account_id: str, since: datetime) -> NotificationStats:
        """Counts by status, delivery counts, and what happened since ``since``."""
        ...


class DeliveryProgress(Protocol):
    """How a notification's deliveries stand: the reads its status is derived from.

    Deciding a status on them is a read-then-write: lock the notifications
    first (``tx.locks.notifications`` or a ``for_update`` read).
    """

    def counts(self, notification_id: str) -> DeliveryCounts:
        """How the notification's deliveries stand."""
        ...

    def counts_many(self, notification_ids: Sequence[str]) -> dict[str, DeliveryCounts]:
        """:meth:`counts` of several notifications at once (absent: no deliveries)."""
        ...

    def has_open(self, notification_id: str) -> bool:
        """Whether any delivery of the notification is PENDING or IN_FLIGHT (cheap)."""
        ...

    def open_among(self, notification_ids: Sequence[str]) -> set[str]:
        """Which of these notifications have a PENDING or IN_FLIGHT delivery (cheap:
        it stops at the first one of each, however large a fan-out)."""
        ...

    def for_notification(self, notification_id: str) -> Sequence[Delivery]:
        """The notification's deliveries, in id order."""
        ...


class RetentionRepository(Protocol):
    """What retention deletes: settled history, and the stats' minute buckets past any window.

    Each call does a bounded amount of work, so that a caller can keep its
    transactions short (the engine's claims wait for SQLite's one writer).
    """

    def delete_settled(self, before: datetime, limit: int) -> int:
        """Delete notifications settled (DELIVERED, FAILED, CANCELLED) before ``before``
        with their deliveries and inbox entries, oldest first: up to ``limit`` of each,
        then the notifications among those looked at (up to ``limit``) that have none left.
        The number of rows deleted (0: nothing left to do). The stats count what
        is kept; a notification with a PENDING or IN_FLIGHT delivery is kept."""
        ...

    def prune_activity(self, before: datetime, limit: int) -> int:
        """Delete up to ``limit`` of the stats' minute buckets that start before
        ``before`` (no stats window reaches them any more); how many."""
        ...

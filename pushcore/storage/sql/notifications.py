"""Notifications, and how their deliveries stand."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

import attrs

from pushcore.domain.model import Delivery, DeliveryCounts, Notification, NotificationStats
from pushcore.domain.states import NotificationStatus
from pushcore.storage.records import (
    DELIVERY_COLUMNS,
    NOTIFICATION_COLUMNS,
    delivery_counts,
    placeholders,
)
from pushcore.storage.sql.accounts import Repository
from pushcore.storage.sql.counters import read_stats

OPEN = "status IN ('PENDING', 'IN_FLIGHT')"
# What changes of a notification after it is created (update_many, refresh), as
# positional values: SQLite binds them quicker than dicts, after every batch.
_STATE_NAMES = ["status", "failure_reason", "wake_at", "settled_at", "devices_targeted", "id"]
STATE = list(zip(_STATE_NAMES, ["text", "text", "time", "time", "int", "text"], strict=True))
_UPDATE = (
    "UPDATE notifications SET status = ?, failure_reason = ?, wake_at = ?, settled_at = ?,"
    " devices_targeted = ? WHERE id = ?"
)


# Built once: every create runs it.
_INSERT = (
    f"INSERT INTO notifications ({NOTIFICATION_COLUMNS})"  # noqa: S608 (our column names)
    f" VALUES ({placeholders(NOTIFICATION_COLUMNS)})"
)


class Notifications(Repository):
    def add(self, notification: Notification) -> None:
        """Insert a new notification; KeyError if its id is taken."""
        self._sql.insert_new(
            _INSERT,
            self._rows.notification_to_row(notification),
            notification.id,
        )
        n = notification
        self._sql.tally.notification(n.account_id, n.status.value, n.created_at, n.settled_at)

    def add_many(self, notifications: Sequence[Notification]) -> None:
        """Insert new notifications in one executemany (pipelined on PostgreSQL)."""
        with self._sql.duplicate_as_key_error("notification"):
            self._sql.many(
                _INSERT,
                [self._rows.notification_to_row(n) for n in notifications],
            )
        for n in notifications:
            self._sql.tally.notification(n.account_id, n.status.value, n.created_at, n.settled_at)

    def _select(self, where: str, *params: object) -> list[Notification]:
        rows = self._sql.select(NOTIFICATION_COLUMNS, "notifications", where, *params)
        return [self._rows.notification_from_row(r) for r in rows]

    def get(
        self, account_id: str, notification_id: str, *, for_update: bool = False
    ) -> Notification | None:
        """The notification with this id in this account, or None (locked: ``for_update``)."""
        # FOR UPDATE, not NO KEY UPDATE: a claim's KEY SHARE lock must wait.
        lock = self._sql.lock("FOR UPDATE") if for_update else ""
        found = self._select("id = ? AND account_id = ?" + lock, notification_id, account_id)
        return found[0] if found else None

    def by_ids(self, notification_ids: Sequence[str]) -> Sequence[Notification]:
        """The notifications with these ids (any account), in id order."""
        return self._select("id = ANY(?) ORDER BY id", self._sql.dialect.array(notification_ids))

    def list(
        self,
        account_id: str,
        status: NotificationStatus | None,
        limit: int,
        before_id: str | None,
    ) -> Sequence[Notification]:
        """The account's notifications, newest first, after the cursor."""
        where, params = "account_id = ?", [account_id]
        if status is not None:
            where += " AND status = ?"
            params.append(status.value)
        if before_id is not None:
            where += " AND id < ?"
            params.append(before_id)
        return self._select(where + " ORDER BY id DESC LIMIT ?", *params, limit)

    def _state(self, n: Notification) -> tuple[object, ...]:
        # Only what changes, in _STATE_NAMES order: a whole row would encode the metadata again.
        time = self._rows.opt_time
        return (n.status.value, n.failure_reason, time(n.wake_at), time(n.settled_at),
            n.devices_targeted, n.id)  # fmt: skip

    def update(self, notification: Notification) -> None:
        """Store the changed state."""
        self.update_many([notification])

    def _count_changes(self, notifications: Sequence[Notification]) -> None:
        # The counts follow (status, settled_at) from what is stored now, read
        # under the lock the caller's decision already holds (taken again: free).
        lock = self._sql.lock("FOR NO KEY UPDATE")
        stored = {
            row[0]: row[1:]
            for row in self._sql.select(
                "id, account_id, status, settled_at",
                "notifications",
                "id = ANY(?) ORDER BY id" + lock,
                self._sql.dialect.array([n.id for n in notifications]),
            )
        }
        read = self._rows.opt_read_time
        for n in notifications:
            old = stored.get(n.id)
            if old is not None:
                account_id, status, settled_at = old
                new = (n.status.value, n.settled_at)
                self._sql.tally.changed(account_id, (status, read(settled_at)), new)

    def update_many(self, notifications: Sequence[Notification]) -> None:
        """Store the changed state of several at once."""
        if not notifications:
            return
        self._count_changes(notifications)
        dialect = self._sql.dialect
        rows = [self._state(n) for n in notifications]
        if dialect.executemany_is_bulk:
            self._sql.many(_UPDATE, rows)
            return
        self._sql.run(
            "UPDATE notifications SET status = v.status,"  # noqa: S608
            " failure_reason = v.failure_reason, wake_at = v.wake_at,"
            " settled_at = v.settled_at, devices_targeted = v.devices_targeted"
            f" FROM {dialect.table(STATE)} WHERE notifications.id = v.id",
            dialect.table_params(rows),
        )

    def refresh(
        self, notifications: Sequence[Notification], *, for_update: bool = False
    ) -> Sequence[Notification]:
        """The changeable state as stored now; unchanged objects are returned as they are."""
        if not notifications:
            return []
        # Locked in id order like every notification lock: see Locks.notifications.
        lock = self._sql.lock("FOR NO KEY UPDATE") if for_update else ""
        rows = self._sql.select(
            ", ".join(_STATE_NAMES),
            "notifications",
            "id = ANY(?) ORDER BY id" + lock,
            self._sql.dialect.array([n.id for n in notifications]),
        )
        stored = {row[5]: tuple(row) for row in rows}
        fresh: list[Notification] = []
        read = self._rows.opt_read_time
        for n in notifications:
            state = stored.get(n.id)
            if state is None or state == self._state(n):
                # Gone, or unchanged: evolving every object costs more than comparing.
                fresh += [] if state is None else [n]
                continue
            status, reason, wake_at, settled_at, targeted, _ = state
            fresh.append(attrs.evolve(n, status=NotificationStatus(status),
                failure_reason=reason, wake_at=read(wake_at), settled_at=read(settled_at),
                devices_targeted=targeted))  # fmt: skip
        return fresh

    def waiting_for(
        self, account_id: str, token: str, now: datetime, *, for_update: bool = False
    ) -> Sequence[Notification]:
        """Notifications a new device with ``token`` should also get (locked: ``for_update``)."""
        # Stream sends go to subscribers' devices, never to the owner's own.
        where = (
            "account_id = ? AND stream_id IS NULL"
            " AND (target_device_token IS NULL OR target_device_token = ?)"
            " AND (status = 'SCHEDULED' OR (status = 'QUEUED' AND scheduled_at > ?))"
            " ORDER BY id"
        )
        lock = self._sql.lock("FOR NO KEY UPDATE") if for_update else ""
        return self._select(where + lock, account_id, token, self._rows.time(now))

    def due_wakeups(self, now: datetime, limit: int) -> Sequence[Notification]:
        """Notifications whose wake_at has come, earliest first (those no other writer holds)."""
        where = "wake_at IS NOT NULL AND wake_at <= ? ORDER BY wake_at, id LIMIT ?"
        lock = self._sql.lock("FOR NO KEY UPDATE SKIP LOCKED")
        return self._select(where + lock, self._rows.time(now), limit)

    def next_wake_at(self) -> datetime | None:
        """The earliest wake_at, or None."""
        (value,) = self._sql.one("SELECT MIN(wake_at) FROM notifications WHERE wake_at IS NOT NULL")
        return self._rows.opt_read_time(value)

    def stats(self, account_id: str, since: datetime) -> NotificationStats:
        """Counts by status, delivery counts, and the activity since ``since``'s minute."""
        # Kept as they change (counters.py): the cost does not grow with history.
        return read_stats(self._sql, account_id, since)


class Progress(Repository):
    def counts(self, notification_id: str) -> DeliveryCounts:
        """How the notification's deliveries stand."""
        rows = self._sql.all(
            "SELECT status, COUNT(*), COUNT(*) FILTER (WHERE attempts > 0) FROM deliveries"
            " WHERE notification_id = ? GROUP BY status",
            (notification_id,),
        )
        return delivery_counts(rows)

    def counts_many(self, notification_ids: Sequence[str]) -> dict[str, DeliveryCounts]:
        """Counts of several notifications in one query."""
        rows = self._sql.all(
            "SELECT notification_id, status, COUNT(*), COUNT(*) FILTER (WHERE attempts > 0)"
            " FROM deliveries WHERE notification_id = ANY(?) GROUP BY notification_id, status",
            (self._sql.dialect.array(notification_ids),),
        )
        grouped: dict[str, list[tuple[str, int, int]]] = {}
        for notification_id, status, count, handed in rows:
            grouped.setdefault(notification_id, []).append((status, count, handed))
        return {n: delivery_counts(found) for n, found in grouped.items()}

    def has_open(self, notification_id: str) -> bool:
        """Whether a delivery is PENDING or IN_FLIGHT."""
        row = self._sql.one(
            f"SELECT 1 FROM deliveries WHERE notification_id = ? AND {OPEN} LIMIT 1",  # noqa: S608
            (notification_id,),
        )
        return row is not None

    def open_among(self, notification_ids: Sequence[str]) -> set[str]:
        """Which of these have a PENDING or IN_FLIGHT delivery."""
        rows = self._sql.all(
            f"SELECT n.value FROM {self._sql.dialect.list_table('n')} WHERE EXISTS"  # noqa: S608
            f" (SELECT 1 FROM deliveries WHERE notification_id = n.value AND {OPEN})",
            (self._sql.dialect.array(notification_ids),),
        )
        return {r[0] for r in rows}

    def for_notification(self, notification_id: str) -> Sequence[Delivery]:
        """The notification's deliveries, in id order."""
        where = "notification_id = ? ORDER BY id"
        rows = self._sql.select(DELIVERY_COLUMNS, "deliveries", where, notification_id)
        return [self._rows.delivery_from_row(r) for r in rows]

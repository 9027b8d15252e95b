"""SQLite repositories of notifications and deliveries: the engine's durable queue."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime

import attrs

from pushcore.domain.model import (
    Delivery,
    DeliveryCounts,
    Notification,
    NotificationStats,
    QueueDepth,
)
from pushcore.domain.states import DeliveryStatus, NotificationStatus
from pushcore.storage.records import (
    DELIVERY_COLUMNS,
    NOTIFICATION_COLUMNS,
    delivery_counts,
    names,
)
from pushcore.storage.sqlite.repos import Repository
from pushcore.storage.sqlite.rows import (
    ROWS,
    duplicate_as_key_error,
    from_ms,
    to_ms,
)

_NAMES = ", ".join(f":{c}" for c in names(NOTIFICATION_COLUMNS))
_DELIVERY_NAMES = ", ".join(f":{c}" for c in names(DELIVERY_COLUMNS))


class Notifications(Repository):
    def add(self, notification: Notification) -> None:
        """Insert a new notification."""
        with duplicate_as_key_error(notification.id):
            self._conn.execute(
                f"INSERT INTO notifications ({NOTIFICATION_COLUMNS}) VALUES ({_NAMES})",  # noqa: S608
                ROWS.notification_to_row(notification),
            )

    def get(self, account_id: str, notification_id: str) -> Notification | None:
        """The notification with this id in this account, or None."""
        where = "id = ? AND account_id = ?"
        rows = self._rows(NOTIFICATION_COLUMNS, "notifications", where, notification_id, account_id)
        return ROWS.notification_from_row(rows[0]) if rows else None

    def by_ids(self, notification_ids: Sequence[str]) -> Sequence[Notification]:
        """The notifications with these ids (any account)."""
        rows = self.rows_in(NOTIFICATION_COLUMNS, "notifications", "id", notification_ids)
        return [ROWS.notification_from_row(r) for r in rows]

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
        where += " ORDER BY id DESC LIMIT ?"
        rows = self._rows(NOTIFICATION_COLUMNS, "notifications", where, *params, limit)
        return [ROWS.notification_from_row(r) for r in rows]

    def update(self, notification: Notification) -> None:
        """Store the changed state."""
        self._conn.execute(
            "UPDATE notifications SET status = :status, failure_reason = :failure_reason,"
            " wake_at = :wake_at, settled_at = :settled_at, devices_targeted = :devices_targeted"
            " WHERE id = :id",
            ROWS.notification_to_row(notification),
        )

    def update_many(self, notifications: Sequence[Notification]) -> None:
        """Store the changed state of several, in one statement run many times."""
        self._conn.executemany(
            "UPDATE notifications SET status = ?, failure_reason = ?, wake_at = ?,"
            " settled_at = ?, devices_targeted = ? WHERE id = ?",
            [
                (
                    n.status.value,
                    n.failure_reason,
                    ROWS.opt_time(n.wake_at),
                    ROWS.opt_time(n.settled_at),
                    n.devices_targeted,
                    n.id,
                )
                for n in notifications
            ],
        )

    def refresh(self, notifications: Sequence[Notification]) -> Sequence[Notification]:
        """The changeable state as stored now; unchanged objects are returned as they are."""
        columns = "id, status, failure_reason, wake_at, settled_at, devices_targeted"
        rows = self.rows_in(columns, "notifications", "id", [n.id for n in notifications])
        stored = {row[0]: tuple(row)[1:] for row in rows}
        fresh: list[Notification] = []
        for n in notifications:
            state = stored.get(n.id)
            if state is None:
                continue
            if state == (
                n.status.value,
                n.failure_reason,
                ROWS.opt_time(n.wake_at),
                ROWS.opt_time(n.settled_at),
                n.devices_targeted,
            ):
                fresh.append(n)
                continue
            status, reason, wake_at, settled_at, targeted = state
            fresh.append(
                attrs.evolve(
                    n,
                    status=NotificationStatus(status),
                    failure_reason=reason,
                    wake_at=ROWS.opt_read_time(wake_at),
                    settled_at=ROWS.opt_read_time(settled_at),
                    devices_targeted=targeted,
                )
            )
        return fresh

    def waiting_for(self, account_id: str, token: str, now: datetime) -> Sequence[Notification]:
        """Notifications a new device with ``token`` should also get."""
        # Stream sends go to subscribers' devices, never to the owner's own.
        where = (
            "account_id = ? AND stream_id IS NULL"
            " AND (target_device_token IS NULL OR target_device_token = ?)"
            " AND (status = 'SCHEDULED' OR (status = 'QUEUED' AND scheduled_at > ?))"
        )
        rows = self._rows(
            NOTIFICATION_COLUMNS, "notifications", where, account_id, token, to_ms(now)
        )
        return [ROWS.notification_from_row(r) for r in rows]

    def due_wakeups(self, now: datetime, limit: int) -> Sequence[Notification]:
        """Notifications whose wake_at has come, earliest first."""
        where = "wake_at IS NOT NULL AND wake_at <= ? ORDER BY wake_at, id LIMIT ?"
        rows = self._rows(NOTIFICATION_COLUMNS, "notifications", where, to_ms(now), limit)
        return [ROWS.notification_from_row(r) for r in rows]

    def next_wake_at(self) -> datetime | None:
        """The earliest wake_at, or None."""
        (value,) = self._conn.execute(
            "SELECT MIN(wake_at) FROM notifications WHERE wake_at IS NOT NULL"
        ).fetchone()
        return None if value is None else from_ms(value)

    def stats(self, account_id: str, since: datetime) -> NotificationStats:
        """Counts by status, delivery counts, and the last window's activity."""
        by_status = {s.value: 0 for s in NotificationStatus}
        for status, count in self._conn.execute(
            "SELECT status, COUNT(*) FROM notifications WHERE account_id = ? GROUP BY status",
            (account_id,),
        ):
            by_status[status] = count
        deliveries = delivery_counts(
            self._conn.execute(
                "SELECT status, COUNT(*), 0 FROM deliveries WHERE account_id = ? GROUP BY status",
                (account_id,),
            ).fetchall()
        )
        since_ms = to_ms(since)
        created, delivered, failed = self._conn.execute(
            "SELECT COUNT(*) FILTER (WHERE created_at >= :since),"
            " COUNT(*) FILTER (WHERE status = 'DELIVERED' AND settled_at >= :since),"
            " COUNT(*) FILTER (WHERE status = 'FAILED' AND settled_at >= :since)"
            " FROM notifications WHERE account_id = :account",
            {"since": since_ms, "account": account_id},
        ).fetchone()
        return NotificationStats(by_status, deliveries, created, delivered, failed)


class Deliveries(Repository):
    def add_many(self, deliveries: Sequence[Delivery]) -> None:
        """Insert new deliveries in bulk."""
        with duplicate_as_key_error("delivery"):
            self._conn.executemany(
                f"INSERT INTO deliveries ({DELIVERY_COLUMNS}) VALUES ({_DELIVERY_NAMES})",  # noqa: S608
                [ROWS.delivery_to_row(d) for d in deliveries],
            )

    def counts(self, notification_id: str) -> DeliveryCounts:
        """How the notification's deliveries stand."""
        rows = self._conn.execute(
            "SELECT status, COUNT(*), SUM(attempts > 0) FROM deliveries"
            " WHERE notification_id = ? GROUP BY status",
            (notification_id,),
        ).fetchall()
        return delivery_counts(rows)

    def fan_out(self, notification: Notification, stream_id: str, due_at: datetime) -> int:
        """One delivery per active subscriber device, in one INSERT ... SELECT."""
        # Done by SQLite, not row by row in Python: a 100,000-device send must
        # be accepted within a second. A delivery's id is internal; the pair
        # (notification, device) it is made of is unique and sorts sensibly.
        cursor = self._conn.execute(
            "INSERT INTO deliveries (id, notification_id, account_id, device_id, status,"
            " due_at, attempts)"
            " SELECT 'dlv_' || substr(?1, 5) || '_' || substr(d.id, 5), ?1, ?2, d.id,"
            " 'PENDING', ?3, 0"
            " FROM subscriptions AS s JOIN devices AS d ON d.account_id = s.account_id"
            " WHERE s.stream_id = ?4 AND d.is_active = 1",
            (notification.id, notification.account_id, to_ms(due_at), stream_id),
        )
        return cursor.rowcount

    def has_open(self, notification_id: str) -> bool:
        """Whether a delivery is PENDING or IN_FLIGHT."""
        row = self._conn.execute(
            "SELECT 1 FROM deliveries WHERE notification_id = ?"
            " AND status IN ('PENDING', 'IN_FLIGHT') LIMIT 1",
            (notification_id,),
        ).fetchone()
        return row is not None

    def open_among(self, notification_ids: Sequence[str]) -> set[str]:
        """Which of these have a PENDING or IN_FLIGHT delivery."""
        rows = self._conn.execute(
            "SELECT value FROM json_each(?) WHERE EXISTS (SELECT 1 FROM deliveries"
            " WHERE notification_id = value AND status IN ('PENDING', 'IN_FLIGHT'))",
            (json.dumps(list(notification_ids)),),
        ).fetchall()
        return {r[0] for r in rows}

    def counts_many(self, notification_ids: Sequence[str]) -> dict[str, DeliveryCounts]:
        """Counts of several notifications in one query."""
        rows = self._conn.execute(
            "SELECT notification_id, status, COUNT(*), SUM(attempts > 0) FROM deliveries"
            " WHERE notification_id IN (SELECT value FROM json_each(?))"
            " GROUP BY notification_id, status",
            (json.dumps(list(notification_ids)),),
        ).fetchall()
        grouped: dict[str, list[tuple[str, int, int]]] = {}
        for notification_id, status, count, handed in rows:
            grouped.setdefault(notification_id, []).append((status, count, handed))
        return {n: delivery_counts(found) for n, found in grouped.items()}

    def for_notification(self, notification_id: str) -> Sequence[Delivery]:
        """The notification's deliveries."""
        where = "notification_id = ? ORDER BY id"
        rows = self._rows(DELIVERY_COLUMNS, "deliveries", where, notification_id)
        return [ROWS.delivery_from_row(r) for r in rows]

    def queue_depth(self, now: datetime) -> QueueDepth:
        """Queue counts for monitoring, from the scheduler's partial indexes."""
        # One subquery per number, each pinned to a partial index: left to
        # itself the planner counts through deliveries_account, i.e. the whole
        # settled history, which outgrows the open queue by far on a live
        # server. With the pins a scrape costs ~60 ms at a million pending.
        pending, due, in_flight, oldest = self._conn.execute(
            "SELECT (SELECT COUNT(*) FROM deliveries INDEXED BY deliveries_due"
            " WHERE status = 'PENDING'),"
            " (SELECT COUNT(*) FROM deliveries INDEXED BY deliveries_due"
            " WHERE status = 'PENDING' AND due_at <= ?),"
            " (SELECT COUNT(*) FROM deliveries INDEXED BY deliveries_lease"
            " WHERE status = 'IN_FLIGHT'),"
            " (SELECT MIN(due_at) FROM deliveries INDEXED BY deliveries_due"
            " WHERE status = 'PENDING')",
            (to_ms(now),),
        ).fetchone()
        return QueueDepth(
            pending=pending,
            due=due,
            in_flight=in_flight,
            oldest_due_at=None if oldest is None else from_ms(oldest),
        )

    def claim_due(
        self, now: datetime, owner: str, lease_until: datetime, limit: int
    ) -> Sequence[Delivery]:
        """Lease due PENDING deliveries and expired IN_FLIGHT ones to ``owner``."""
        claimed: list[Delivery] = []
        now_ms, lease_ms = to_ms(now), to_ms(lease_until)
        # Expired leases first: their owner died, they are the most overdue.
        for status, column in (("IN_FLIGHT", "lease_until"), ("PENDING", "due_at")):
            room = limit - len(claimed)
            if room <= 0:
                break
            # Only this method's literals reach the f-string; values are bound.
            sql = (
                "UPDATE deliveries SET status = 'IN_FLIGHT',"  # noqa: S608
                " lease_owner = ?, lease_until = ?, attempts = attempts + 1"
                " WHERE id IN (SELECT id FROM deliveries"
                f" WHERE status = '{status}' AND {column} <= ? ORDER BY {column}, id LIMIT ?)"
                f" RETURNING {DELIVERY_COLUMNS}"
            )
            rows = self._conn.execute(sql, (owner, lease_ms, now_ms, room)).fetchall()
            claimed += (ROWS.delivery_from_row(r) for r in rows)
        claimed.sort(key=lambda d: (d.due_at, d.id))
        return claimed

    def next_due_at(self) -> datetime | None:
        """The earliest due time or lease end, or None."""
        (value,) = self._conn.execute(
            "SELECT MIN(t) FROM ("
            " SELECT MIN(due_at) AS t FROM deliveries WHERE status = 'PENDING'"
            " UNION ALL"
            " SELECT MIN(lease_until) FROM deliveries WHERE status = 'IN_FLIGHT')"
        ).fetchone()
        return None if value is None else from_ms(value)

    def settle(
        self,
        delivery_id: str,
        owner: str,
        status: DeliveryStatus,
        reason: str | None,
        at: datetime,
    ) -> bool:
        """DELIVERED or FAILED, if ``owner`` still holds the lease."""
        cursor = self._conn.execute(
            "UPDATE deliveries SET status = ?, failure_reason = ?, settled_at = ?,"
            " lease_owner = NULL, lease_until = NULL"
            " WHERE id = ? AND status = 'IN_FLIGHT' AND lease_owner = ?",
            (status.value, reason, to_ms(at), delivery_id, owner),
        )
        return cursor.rowcount > 0

    def settle_many(
        self,
        delivery_ids: Sequence[str],
        owner: str,
        status: DeliveryStatus,
        reason: str | None,
        at: datetime,
    ) -> set[str]:
        """DELIVERED or FAILED, those ``owner`` still holds; their ids. One statement."""
        rows = self._conn.execute(
            "UPDATE deliveries SET status = ?, failure_reason = ?, settled_at = ?,"
            " lease_owner = NULL, lease_until = NULL"
            " WHERE id IN (SELECT value FROM json_each(?))"
            " AND status = 'IN_FLIGHT' AND lease_owner = ? RETURNING id",
            (status.value, reason, to_ms(at), json.dumps(list(delivery_ids)), owner),
        ).fetchall()
        return {row[0] for row in rows}

    def retry(self, delivery_id: str, owner: str, due_at: datetime, reason: str) -> bool:
        """Back to PENDING at ``due_at``, if ``owner`` still holds the lease."""
        cursor = self._conn.execute(
            "UPDATE deliveries SET status = 'PENDING', due_at = ?, failure_reason = ?,"
            " lease_owner = NULL, lease_until = NULL"
            " WHERE id = ? AND status = 'IN_FLIGHT' AND lease_owner = ?",
            (to_ms(due_at), reason, delivery_id, owner),
        )
        return cursor.rowcount > 0

    def release(self, delivery_ids: Sequence[str], owner: str) -> int:
        """Hand leased deliveries back unsent."""
        released = 0
        for start in range(0, len(delivery_ids), 500):
            chunk = delivery_ids[start : start + 500]
            marks = ",".join("?" * len(chunk))
            cursor = self._conn.execute(
                "UPDATE deliveries SET status = 'PENDING', attempts = attempts - 1,"  # noqa: S608
                " lease_owner = NULL, lease_until = NULL"
                f" WHERE id IN ({marks}) AND status = 'IN_FLIGHT' AND lease_owner = ?",
                (*chunk, owner),
            )
            released += cursor.rowcount
        return released

    def cancel_unsent(self, notification_id: str, reason: str) -> int:
        """Cancel the notification's PENDING deliveries never handed to a gateway."""
        cursor = self._conn.execute(
            "UPDATE deliveries SET status = 'CANCELLED', failure_reason = ?"
            " WHERE notification_id = ? AND status = 'PENDING' AND attempts = 0",
            (reason, notification_id),
        )
        return cursor.rowcount

    def cancel_for_device(self, device_id: str, reason: str) -> Sequence[str]:
        """Cancel the device's PENDING deliveries; the notifications touched."""
        rows = self._conn.execute(
            "UPDATE deliveries SET status = 'CANCELLED', failure_reason = ?"
            " WHERE device_id = ? AND status = 'PENDING' RETURNING notification_id",
            (reason, device_id),
        ).fetchall()
        return sorted({r[0] for r in rows})

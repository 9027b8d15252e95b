"""PostgreSQL repositories of notifications and deliveries: the engine's durable queue.

Several processes work this queue at once, and writers are not serialised
as they are on SQLite, so the places where a transaction reads and then
writes on what it read take row locks (write transactions only):

- a notification's status is derived from its deliveries (``reconcile``):
  :meth:`Notifications.refresh`, :meth:`Deliveries.open_among` and
  :meth:`Deliveries.counts_many` first lock the notifications (FOR NO KEY
  UPDATE, in id order), so that two workers
  settling the last two deliveries of one notification cannot both see the
  other's as still open and leave the notification QUEUED for ever;
- a claim takes a KEY SHARE lock on the notification of each PENDING
  delivery it takes, skipping notifications that are locked FOR UPDATE,
  which :meth:`Notifications.get` does for a cancel: a cancel thus waits for
  a claim already under way (and then sees the delivery handed), and claims
  that come later leave the notification's deliveries alone until it ends;
- wake-ups are taken FOR NO KEY UPDATE SKIP LOCKED, so two schedulers never
  reconcile the same notification at once, and the notifications a new device
  should get are locked before it is given them.

Notification locks are taken before delivery locks wherever a transaction
may wait for both, and in id order within a statement. One inversion is
left: an engine batch that deactivates a device locks that device's
notifications first, then the batch's, so two such batches at once can meet
in opposite order. PostgreSQL detects that deadlock and fails one of them;
its outcomes go unrecorded and its deliveries are sent again after their
lease, as after a crash.
"""

from __future__ import annotations

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
from pushcore.storage.postgres.repos import Repository
from pushcore.storage.postgres.rows import (
    ROWS,
    duplicate_as_key_error,
    ts,
)
from pushcore.storage.records import (
    DELIVERY_COLUMNS,
    NOTIFICATION_COLUMNS,
    delivery_counts,
    names,
)

_NAMES = ", ".join(f"%({c})s" for c in names(NOTIFICATION_COLUMNS))
_OPEN = "status IN ('PENDING', 'IN_FLIGHT')"
# What changes of a notification after it is created: read back by refresh.
_STATE = ("id", "status", "failure_reason", "wake_at", "settled_at", "devices_targeted")


class Notifications(Repository):
    def add(self, notification: Notification) -> None:
        """Insert a new notification."""
        self._insert_new(
            f"INSERT INTO notifications ({NOTIFICATION_COLUMNS}) VALUES ({_NAMES})",  # noqa: S608
            ROWS.notification_to_row(notification),
            notification.id,
        )

    def _select(self, where: str, *params: object, lock: str = "") -> list[Notification]:
        suffix = f" {lock}" if lock and self._writing else ""
        rows = self._rows(NOTIFICATION_COLUMNS, "notifications", where + suffix, *params)
        return [ROWS.notification_from_row(r) for r in rows]

    def get(self, account_id: str, notification_id: str) -> Notification | None:
        """The notification with this id in this account, or None.

        A write transaction locks it FOR UPDATE (see the module docstring):
        the caller decides on what it read, and claims keep off until it ends.
        """
        found = self._select(
            "id = %s AND account_id = %s", notification_id, account_id, lock="FOR UPDATE"
        )
        return found[0] if found else None

    def by_ids(self, notification_ids: Sequence[str]) -> Sequence[Notification]:
        """The notifications with these ids (any account), in id order as on SQLite."""
        return self._select("id = ANY(%s) ORDER BY id", list(notification_ids))

    def list(
        self,
        account_id: str,
        status: NotificationStatus | None,
        limit: int,
        before_id: str | None,
    ) -> Sequence[Notification]:
        """The account's notifications, newest first, after the cursor."""
        where, params = "account_id = %s", [account_id]
        if status is not None:
            where += " AND status = %s"
            params.append(status.value)
        if before_id is not None:
            where += " AND id < %s"
            params.append(before_id)
        return self._select(where + " ORDER BY id DESC LIMIT %s", *params, limit)

    def update(self, notification: Notification) -> None:
        """Store the changed state."""
        self._conn.execute(
            "UPDATE notifications SET status = %(status)s, failure_reason = %(failure_reason)s,"
            " wake_at = %(wake_at)s, settled_at = %(settled_at)s,"
            " devices_targeted = %(devices_targeted)s WHERE id = %(id)s",
            ROWS.notification_to_row(notification),
        )

    def update_many(self, notifications: Sequence[Notification]) -> None:
        """Store the changed state of several, in one statement over arrays."""
        if not notifications:
            return
        rows = [ROWS.notification_to_row(n) for n in notifications]
        self._conn.execute(
            "UPDATE notifications AS n SET status = v.status,"
            " failure_reason = v.failure_reason, wake_at = v.wake_at,"
            " settled_at = v.settled_at, devices_targeted = v.devices_targeted"
            " FROM unnest(%s::text[], %s::text[], %s::text[], %s::timestamptz[],"
            " %s::timestamptz[], %s::integer[])"
            " AS v(id, status, failure_reason, wake_at, settled_at, devices_targeted)"
            " WHERE n.id = v.id",
            [[row[name] for row in rows] for name in _STATE],
        )

    def refresh(self, notifications: Sequence[Notification]) -> Sequence[Notification]:
        """The changeable state as stored now (locked, when writing); deleted ones left out."""
        if not notifications:
            return []
        # Locked in id order like every notification lock here: the engine
        # refreshes what it is about to reconcile.
        lock = " ORDER BY id FOR NO KEY UPDATE" if self._writing else ""
        rows = self._conn.execute(
            f"SELECT {', '.join(_STATE)} FROM notifications WHERE id = ANY(%s){lock}",  # noqa: S608
            ([n.id for n in notifications],),
        ).fetchall()
        stored = {row[0]: row[1:] for row in rows}
        fresh: list[Notification] = []
        for n in notifications:
            state = stored.get(n.id)
            if state is None:
                continue
            status, reason, wake_at, settled_at, targeted = state
            fresh.append(
                attrs.evolve(
                    n,
                    status=NotificationStatus(status),
                    failure_reason=reason,
                    wake_at=wake_at,
                    settled_at=settled_at,
                    devices_targeted=targeted,
                )
            )
        return fresh

    def waiting_for(self, account_id: str, token: str, now: datetime) -> Sequence[Notification]:
        """Notifications a new device with ``token`` should also get (locked, when writing)."""
        # Stream sends go to subscribers' devices, never to the owner's own.
        where = (
            "account_id = %s AND stream_id IS NULL"
            " AND (target_device_token IS NULL OR target_device_token = %s)"
            " AND (status = 'SCHEDULED' OR (status = 'QUEUED' AND scheduled_at > %s))"
            " ORDER BY id"
        )
        return self._select(where, account_id, token, ts(now), lock="FOR NO KEY UPDATE")

    def due_wakeups(self, now: datetime, limit: int) -> Sequence[Notification]:
        """Notifications whose wake_at has come, earliest first (those no other writer holds)."""
        where = "wake_at IS NOT NULL AND wake_at <= %s ORDER BY wake_at, id LIMIT %s"
        return self._select(where, ts(now), limit, lock="FOR NO KEY UPDATE SKIP LOCKED")

    def next_wake_at(self) -> datetime | None:
        """The earliest wake_at, or None."""
        row = self._conn.execute(
            "SELECT MIN(wake_at) FROM notifications WHERE wake_at IS NOT NULL"
        ).fetchone()
        return None if row is None else row[0]

    def stats(self, account_id: str, since: datetime) -> NotificationStats:
        """Counts by status, delivery counts, and the last window's activity."""
        by_status = {s.value: 0 for s in NotificationStatus}
        for status, count in self._conn.execute(
            "SELECT status, COUNT(*) FROM notifications WHERE account_id = %s GROUP BY status",
            (account_id,),
        ):
            by_status[status] = count
        deliveries = delivery_counts(
            self._conn.execute(
                "SELECT status, COUNT(*), 0 FROM deliveries WHERE account_id = %s GROUP BY status",
                (account_id,),
            ).fetchall()
        )
        row = self._conn.execute(
            "SELECT COUNT(*) FILTER (WHERE created_at >= %(since)s),"
            " COUNT(*) FILTER (WHERE status = 'DELIVERED' AND settled_at >= %(since)s),"
            " COUNT(*) FILTER (WHERE status = 'FAILED' AND settled_at >= %(since)s)"
            " FROM notifications WHERE account_id = %(account)s",
            {"since": ts(since), "account": account_id},
        ).fetchone()
        assert row is not None  # an aggregate always has its row
        created, delivered, failed = row
        return NotificationStats(by_status, deliveries, created, delivered, failed)


class Deliveries(Repository):
    def add_many(self, deliveries: Sequence[Delivery]) -> None:
        """Insert new deliveries in bulk, all or none (KeyError on a taken id)."""
        if not deliveries:
            return
        # One statement over arrays (a column each), whatever the number of rows.
        rows = [ROWS.delivery_to_row(d) for d in deliveries]
        columns = [[row[name] for row in rows] for name in names(DELIVERY_COLUMNS)]
        with duplicate_as_key_error(self._conn, "delivery"):
            self._conn.execute(
                f"INSERT INTO deliveries ({DELIVERY_COLUMNS})"  # noqa: S608
                " SELECT * FROM unnest(%s::text[], %s::text[], %s::text[], %s::text[],"
                " %s::text[], %s::timestamptz[], %s::integer[], %s::text[],"
                " %s::timestamptz[], %s::text[], %s::timestamptz[])",
                columns,
            )

    def _lock_notifications(self, notification_ids: Sequence[str]) -> None:
        # In id order, so that two transactions locking overlapping sets
        # cannot each hold what the other waits for.
        if self._writing and notification_ids:
            self._conn.execute(
                "SELECT 1 FROM notifications WHERE id = ANY(%s) ORDER BY id FOR NO KEY UPDATE",
                (list(notification_ids),),
            )

    def counts(self, notification_id: str) -> DeliveryCounts:
        """How the notification's deliveries stand."""
        rows = self._conn.execute(
            "SELECT status, COUNT(*), COUNT(*) FILTER (WHERE attempts > 0) FROM deliveries"
            " WHERE notification_id = %s GROUP BY status",
            (notification_id,),
        ).fetchall()
        return delivery_counts(rows)

    def fan_out(self, notification: Notification, stream_id: str, due_at: datetime) -> int:
        """One delivery per active subscriber device, in one INSERT ... SELECT."""
        # Done by the database, not row by row in Python: a 100,000-device send
        # must be accepted within a second. Ids as the SQLite store makes them.
        cursor = self._conn.execute(
            "INSERT INTO deliveries (id, notification_id, account_id, device_id, status,"
            " due_at, attempts)"
            " SELECT 'dlv_' || substr(%(n)s, 5) || '_' || substr(d.id, 5), %(n)s, %(a)s, d.id,"
            " 'PENDING', %(due)s, 0"
            " FROM subscriptions AS s JOIN devices AS d ON d.account_id = s.account_id"
            " WHERE s.stream_id = %(s)s AND d.is_active",
            {"n": notification.id, "a": notification.account_id, "due": ts(due_at), "s": stream_id},
        )
        return cursor.rowcount

    def has_open(self, notification_id: str) -> bool:
        """Whether a delivery is PENDING or IN_FLIGHT."""
        row = self._conn.execute(
            f"SELECT 1 FROM deliveries WHERE notification_id = %s AND {_OPEN} LIMIT 1",  # noqa: S608
            (notification_id,),
        ).fetchone()
        return row is not None

    def open_among(self, notification_ids: Sequence[str]) -> set[str]:
        """Which of these have a PENDING or IN_FLIGHT delivery (locked first, when writing)."""
        self._lock_notifications(notification_ids)
        rows = self._conn.execute(
            "SELECT n FROM unnest(%s::text[]) AS n WHERE EXISTS (SELECT 1 FROM deliveries"  # noqa: S608
            f" WHERE notification_id = n AND {_OPEN})",
            (list(notification_ids),),
        ).fetchall()
        return {r[0] for r in rows}

    def counts_many(self, notification_ids: Sequence[str]) -> dict[str, DeliveryCounts]:
        """Counts of several notifications in one query (locked first, when writing)."""
        self._lock_notifications(notification_ids)
        rows = self._conn.execute(
            "SELECT notification_id, status, COUNT(*), COUNT(*) FILTER (WHERE attempts > 0)"
            " FROM deliveries WHERE notification_id = ANY(%s) GROUP BY notification_id, status",
            (list(notification_ids),),
        ).fetchall()
        grouped: dict[str, list[tuple[str, int, int]]] = {}
        for notification_id, status, count, handed in rows:
            grouped.setdefault(notification_id, []).append((status, count, handed))
        return {n: delivery_counts(found) for n, found in grouped.items()}

    def for_notification(self, notification_id: str) -> Sequence[Delivery]:
        """The notification's deliveries."""
        where = "notification_id = %s ORDER BY id"
        rows = self._rows(DELIVERY_COLUMNS, "deliveries", where, notification_id)
        return [ROWS.delivery_from_row(r) for r in rows]

    def queue_depth(self, now: datetime) -> QueueDepth:
        """Queue counts for monitoring, from the scheduler's partial indexes."""
        row = self._conn.execute(
            "SELECT (SELECT COUNT(*) FROM deliveries WHERE status = 'PENDING'),"
            " (SELECT COUNT(*) FROM deliveries WHERE status = 'PENDING' AND due_at <= %s),"
            " (SELECT COUNT(*) FROM deliveries WHERE status = 'IN_FLIGHT'),"
            " (SELECT MIN(due_at) FROM deliveries WHERE status = 'PENDING')",
            (ts(now),),
        ).fetchone()
        assert row is not None  # aggregates always have their row
        pending, due, in_flight, oldest = row
        return QueueDepth(pending=pending, due=due, in_flight=in_flight, oldest_due_at=oldest)

    def _lease(self, ids: Sequence[str], owner: str, lease_until: datetime) -> list[Delivery]:
        rows = self._conn.execute(
            "UPDATE deliveries SET status = 'IN_FLIGHT', lease_owner = %s, lease_until = %s,"  # noqa: S608
            f" attempts = attempts + 1 WHERE id = ANY(%s) RETURNING {DELIVERY_COLUMNS}",
            (owner, ts(lease_until), list(ids)),
        ).fetchall()
        return [ROWS.delivery_from_row(r) for r in rows]

    def _claimable_pending(self, now: datetime, limit: int) -> list[str]:
        """Due PENDING deliveries this transaction now holds, whose notification no cancel holds."""
        # SKIP LOCKED: rows another scheduler is claiming right now are
        # passed over instead of waited for, and never taken twice.
        candidates = self._conn.execute(
            "SELECT id, notification_id FROM deliveries WHERE status = 'PENDING'"
            " AND due_at <= %s ORDER BY due_at, id LIMIT %s FOR UPDATE SKIP LOCKED",
            (ts(now), limit),
        ).fetchall()
        if not candidates:
            return []
        wanted = sorted({n for _, n in candidates})
        shared = {
            r[0]
            for r in self._conn.execute(
                "SELECT id FROM notifications WHERE id = ANY(%s) ORDER BY id"
                " FOR KEY SHARE SKIP LOCKED",
                (wanted,),
            )
        }
        held = [n for n in wanted if n not in shared]
        if held:
            # Skipped: locked by a cancel, or no such row (nothing to protect then).
            existing = self._conn.execute(
                "SELECT id FROM notifications WHERE id = ANY(%s)", (held,)
            ).fetchall()
            shared |= set(held) - {r[0] for r in existing}
        return [d for d, n in candidates if n in shared]

    def claim_due(
        self, now: datetime, owner: str, lease_until: datetime, limit: int
    ) -> Sequence[Delivery]:
        """Lease due PENDING deliveries and expired IN_FLIGHT ones to ``owner``."""
        if limit <= 0:
            return []
        # Expired leases first: their owner died, they are the most overdue.
        expired = self._conn.execute(
            "SELECT id FROM deliveries WHERE status = 'IN_FLIGHT' AND lease_until <= %s"
            " ORDER BY lease_until, id LIMIT %s FOR UPDATE SKIP LOCKED",
            (ts(now), limit),
        ).fetchall()
        claimed = self._lease([r[0] for r in expired], owner, lease_until) if expired else []
        room = limit - len(claimed)
        if room > 0:
            pending = self._claimable_pending(now, room)
            if pending:
                claimed += self._lease(pending, owner, lease_until)
        claimed.sort(key=lambda d: (d.due_at, d.id))
        return claimed

    def next_due_at(self) -> datetime | None:
        """The earliest due time or lease end, or None."""
        row = self._conn.execute(
            "SELECT LEAST("
            " (SELECT MIN(due_at) FROM deliveries WHERE status = 'PENDING'),"
            " (SELECT MIN(lease_until) FROM deliveries WHERE status = 'IN_FLIGHT'))"
        ).fetchone()
        return None if row is None else row[0]

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
            "UPDATE deliveries SET status = %s, failure_reason = %s, settled_at = %s,"
            " lease_owner = NULL, lease_until = NULL"
            " WHERE id = %s AND status = 'IN_FLIGHT' AND lease_owner = %s",
            (status.value, reason, ts(at), delivery_id, owner),
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
            "UPDATE deliveries SET status = %s, failure_reason = %s, settled_at = %s,"
            " lease_owner = NULL, lease_until = NULL"
            " WHERE id = ANY(%s) AND status = 'IN_FLIGHT' AND lease_owner = %s RETURNING id",
            (status.value, reason, ts(at), list(delivery_ids), owner),
        ).fetchall()
        return {row[0] for row in rows}

    def retry(self, delivery_id: str, owner: str, due_at: datetime, reason: str) -> bool:
        """Back to PENDING at ``due_at``, if ``owner`` still holds the lease."""
        cursor = self._conn.execute(
            "UPDATE deliveries SET status = 'PENDING', due_at = %s, failure_reason = %s,"
            " lease_owner = NULL, lease_until = NULL"
            " WHERE id = %s AND status = 'IN_FLIGHT' AND lease_owner = %s",
            (ts(due_at), reason, delivery_id, owner),
        )
        return cursor.rowcount > 0

    def release(self, delivery_ids: Sequence[str], owner: str) -> int:
        """Hand leased deliveries back unsent."""
        cursor = self._conn.execute(
            "UPDATE deliveries SET status = 'PENDING', attempts = attempts - 1,"
            " lease_owner = NULL, lease_until = NULL"
            " WHERE id = ANY(%s) AND status = 'IN_FLIGHT' AND lease_owner = %s",
            (list(delivery_ids), owner),
        )
        return cursor.rowcount

    def cancel_unsent(self, notification_id: str, reason: str) -> int:
        """Cancel the notification's PENDING deliveries never handed to a gateway."""
        cursor = self._conn.execute(
            "UPDATE deliveries SET status = 'CANCELLED', failure_reason = %s"
            " WHERE notification_id = %s AND status = 'PENDING' AND attempts = 0",
            (reason, notification_id),
        )
        return cursor.rowcount

    def cancel_for_device(self, device_id: str, reason: str) -> Sequence[str]:
        """Cancel the device's PENDING deliveries; the notifications touched."""
        # Their notifications are locked first (see the module docstring): the
        # caller goes on to settle them, and a cancel holding one of them
        # must not be left waiting for these delivery rows in turn.
        touched = self._conn.execute(
            "SELECT DISTINCT notification_id FROM deliveries"
            " WHERE device_id = %s AND status = 'PENDING'",
            (device_id,),
        ).fetchall()
        self._lock_notifications(sorted(r[0] for r in touched))
        rows = self._conn.execute(
            "UPDATE deliveries SET status = 'CANCELLED', failure_reason = %s"
            " WHERE device_id = %s AND status = 'PENDING' RETURNING notification_id",
            (reason, device_id),
        ).fetchall()
        return sorted({r[0] for r in rows})

"""The engine's queue: deliveries claimed and recorded (Queue), made and cancelled (Schedule).

A claim is a lease decided by the database. On PostgreSQL several schedulers
claim at once: ``FOR UPDATE SKIP LOCKED`` passes over rows another claim
holds, and a ``KEY SHARE`` lock on each PENDING delivery's notification,
skipping notifications a cancel holds ``FOR UPDATE``, keeps claims off a
notification being cancelled (a cancel that comes second waits for the claim,
then sees the delivery handed). Notification locks come before delivery locks
wherever a transaction may wait for both; see docs/architecture.md for the
one inversion left. On SQLite the one writer needs none of this.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from datetime import datetime

from pushcore.domain.model import Delivery, Notification, QueueDepth
from pushcore.domain.states import DeliveryStatus
from pushcore.storage.records import DELIVERIES
from pushcore.storage.sql.accounts import Repository
from pushcore.storage.sql.dialect import Sql
from pushcore.storage.sql.inbox_replace import audience

_LEASE = (
    "UPDATE deliveries SET status = 'IN_FLIGHT', lease_owner = ?, lease_until = ?,"
    " attempts = attempts + 1"
)
_SETTLE = (
    "UPDATE deliveries SET status = ?, failure_reason = ?, settled_at = ?,"
    " lease_owner = NULL, lease_until = NULL, last_attempt_at = ?, delivered_at = ?"
)
_HELD = "AND status = 'IN_FLIGHT' AND lease_owner = ?"


def _settled_times(at: object, status: DeliveryStatus) -> tuple[object, object, object]:
    """_SETTLE's settled_at, last_attempt_at and delivered_at: the answer's time, the
    last only if it delivered."""
    return at, at, at if status is DeliveryStatus.DELIVERED else None


_NEXT_DUE_UNHELD = (
    "SELECT MIN(t) FROM ("
    " SELECT MIN(due_at) AS t FROM deliveries WHERE status = 'PENDING'"
    " UNION ALL"
    " SELECT MIN(lease_until) FROM deliveries WHERE status = 'IN_FLIGHT') AS m"
)
_NEXT_DUE = (
    "SELECT MIN(t) FROM ("
    " SELECT MIN(due_at) AS t FROM deliveries WHERE status = 'PENDING'"
    " UNION ALL"
    " SELECT MIN(lease_until) FROM deliveries WHERE status = 'IN_FLIGHT'"
    " UNION ALL"
    " SELECT MIN(held_until) FROM deliveries WHERE status = 'HELD') AS m"
)


class Queue(Repository):
    def queue_depth(self, now: datetime) -> QueueDepth:
        """Queue counts for monitoring, from the scheduler's partial indexes."""
        # One subquery per number, each on a partial index. SQLite's planner,
        # left to itself, counted through an index of all deliveries, i.e. the whole
        # settled history, hence its pins (~60 ms a scrape at a million pending).
        pending, due, in_flight, oldest = self._sql.one(
            "SELECT (SELECT COUNT(*) FROM deliveries INDEXED BY deliveries_due"
            " WHERE status = 'PENDING'),"
            " (SELECT COUNT(*) FROM deliveries INDEXED BY deliveries_due"
            " WHERE status = 'PENDING' AND due_at <= ?),"
            " (SELECT COUNT(*) FROM deliveries INDEXED BY deliveries_lease"
            " WHERE status = 'IN_FLIGHT'),"
            " (SELECT MIN(due_at) FROM deliveries INDEXED BY deliveries_due"
            " WHERE status = 'PENDING')",
            (self._dialect.time(now),),
        )
        return QueueDepth(
            pending=pending,
            due=due,
            in_flight=in_flight,
            oldest_due_at=self._dialect.opt_read_time(oldest),
        )

    def _claim(
        self,
        status: str,
        column: str,
        now: datetime,
        owner: str,
        lease: object,
        room: int,
        order: str = "",
    ) -> list[Delivery]:
        # A PENDING delivery is taken only with a KEY SHARE lock on its
        # notification (skipped while a cancel holds it FOR UPDATE) or when it
        # has none (nothing to protect then); SQLite's one writer needs neither.
        guard = (
            " AND (EXISTS (SELECT 1 FROM notifications AS n WHERE n.id = notification_id"
            " FOR KEY SHARE SKIP LOCKED) OR NOT EXISTS (SELECT 1 FROM notifications AS n"
            " WHERE n.id = notification_id))"
            if status in ("PENDING", "HELD") and self._sql.locking
            else ""
        )
        # Only this module's literals reach the text; values are bound. SKIP
        # LOCKED: rows another scheduler is claiming right now are passed over
        # instead of waited for, and never taken twice.
        rows = self._sql.changed(
            _LEASE,
            f"id IN (SELECT id FROM deliveries WHERE status = '{status}'"  # noqa: S608
            f" AND {column} <= ? ORDER BY {order or column}, id LIMIT ?"
            f" FOR UPDATE SKIP LOCKED){guard}",
            DELIVERIES.columns,
            (owner, lease),
            (self._dialect.time(now), room),
            key="id",
        )
        decode = DELIVERIES.codec(self._dialect).decode
        return [decode(r) for r in rows]

    def claim_due(
        self,
        now: datetime,
        owner: str,
        lease_until: datetime,
        limit: int,
        release: int | None = None,
    ) -> Sequence[Delivery]:
        """Lease due PENDING deliveries and expired IN_FLIGHT ones to ``owner``, then
        HELD ones whose quiet ended (at most ``release``)."""
        if limit <= 0:
            return []
        lease = self._dialect.time(lease_until)
        # Expired leases first: their owner died, they are the most overdue.
        claimed = self._claim("IN_FLIGHT", "lease_until", now, owner, lease, limit)
        if len(claimed) < limit:
            claimed += self._claim("PENDING", "due_at", now, owner, lease, limit - len(claimed))
        room = limit - len(claimed)
        if release is not None:
            room = min(room, release)
        if room > 0:
            # Quiet hours that ended: what they held goes out in its due order.
            order = "held_until, due_at"
            claimed += self._claim("HELD", "held_until", now, owner, lease, room, order)
        claimed.sort(key=lambda d: (d.due_at, d.id))
        return claimed

    def next_due_at(self, held: bool = True) -> datetime | None:
        """The earliest due time or lease end (or end of a quiet, with ``held``), or None."""
        (value,) = self._sql.one(_NEXT_DUE if held else _NEXT_DUE_UNHELD)
        return self._dialect.opt_read_time(value)

    def due_count(self, by: datetime, limit: int) -> int:
        """How many PENDING deliveries are due by ``by``, counted up to ``limit``."""
        # A range of the partial index deliveries_due, cut at ``limit``: an idle
        # engine asks this before each sleep.
        (count,) = self._sql.one(
            "SELECT COUNT(*) FROM (SELECT 1 FROM deliveries WHERE status = 'PENDING'"
            " AND due_at <= ? LIMIT ?) AS d",
            (self._dialect.time(by), limit),
        )
        return int(count)

    def settle(
        self,
        delivery_id: str,
        owner: str,
        status: DeliveryStatus,
        reason: str | None,
        at: datetime,
    ) -> bool:
        """DELIVERED or FAILED, if ``owner`` still holds the lease."""
        rows = self._sql.all(
            f"{_SETTLE} WHERE id = ? {_HELD} RETURNING account_id",
            (
                status.value,
                reason,
                *_settled_times(self._dialect.time(at), status),
                delivery_id,
                owner,
            ),
        )
        self._sql.tally.moved(rows, "IN_FLIGHT", status.value)
        return bool(rows)

    def settle_many(
        self,
        delivery_ids: Sequence[str],
        owner: str,
        status: DeliveryStatus,
        reason: str | None,
        at: datetime,
    ) -> set[str]:
        """DELIVERED or FAILED, those ``owner`` still holds; their ids. One UPDATE."""
        rows = self._sql.changed(
            _SETTLE,
            f"id = ANY(?) {_HELD}",
            "account_id, id",
            (status.value, reason, *_settled_times(self._dialect.time(at), status)),
            (self._dialect.array(delivery_ids), owner),
        )
        self._sql.tally.moved(rows, "IN_FLIGHT", status.value)
        return {row[1] for row in rows}

    def to_roll_up(self, delivery_ids: Sequence[str], at: datetime) -> None:
        """Note these settled deliveries as recorded and their notifications not yet
        rolled up (what :meth:`rolled_up` and :meth:`leftover_rollups` take)."""
        if not delivery_ids:
            return
        # Read back from the rows this transaction just settled: one statement,
        # and a delivery is settled once, so its row is never there already.
        self._sql.run(
            "INSERT INTO rollups (delivery_id, notification_id, recorded_at)"
            " SELECT id, notification_id, ? FROM deliveries WHERE id = ANY(?)"
            " ON CONFLICT DO NOTHING",
            (self._dialect.time(at), self._dialect.array(delivery_ids)),
        )

    def rolled_up(self, delivery_ids: Sequence[str]) -> list[str]:
        """Take these deliveries' roll-up notes; the notifications of those still there."""
        rows = self._sql.changed(
            "DELETE FROM rollups",
            "delivery_id = ANY(?)",
            "notification_id",
            where_params=(self._dialect.array(delivery_ids),),
        )
        return sorted({r[0] for r in rows})

    def leftover_rollups(self, before: datetime | None, limit: int) -> list[str]:
        """Take up to ``limit`` roll-up notes recorded before ``before`` (None: any);
        their notifications. Notes another transaction is taking are passed over."""
        since = "" if before is None else "recorded_at < ? AND "
        params: tuple[object, ...] = () if before is None else (self._dialect.time(before),)
        rows = self._sql.changed(
            "DELETE FROM rollups",
            "delivery_id IN (SELECT delivery_id FROM rollups"  # noqa: S608
            f" WHERE {since}TRUE ORDER BY delivery_id LIMIT ? FOR UPDATE SKIP LOCKED)",
            "notification_id",
            where_params=(*params, limit),
        )
        return sorted({r[0] for r in rows})

    def retry(
        self,
        delivery_id: str,
        owner: str,
        due_at: datetime,
        reason: str,
        at: datetime | None = None,
    ) -> bool:
        """Back to PENDING at ``due_at``, if ``owner`` still holds the lease; ``at``: when
        the gateway answered (the delivery's last attempt)."""
        # Neither this nor release() changes a count: IN_FLIGHT counts as pending.
        cursor = self._sql.run(
            "UPDATE deliveries SET status = 'PENDING', due_at = ?, failure_reason = ?,"  # noqa: S608
            " last_attempt_at = COALESCE(?, last_attempt_at),"
            f" lease_owner = NULL, lease_until = NULL WHERE id = ? {_HELD}",
            (self._dialect.time(due_at), reason, self._dialect.opt_time(at), delivery_id, owner),
        )
        return bool(cursor.rowcount > 0)

    def release(
        self, delivery_ids: Sequence[str], owner: str, due_at: datetime | None = None
    ) -> int:
        """Hand leased deliveries back unsent (due again at ``due_at`` when given)."""
        due = None if due_at is None else self._dialect.time(due_at)
        cursor = self._sql.run(
            "UPDATE deliveries SET status = 'PENDING', attempts = attempts - 1,"  # noqa: S608
            " due_at = COALESCE(?, due_at), lease_owner = NULL, lease_until = NULL"
            f" WHERE id = ANY(?) {_HELD}",
            (due, self._dialect.array(delivery_ids), owner),
        )
        return int(cursor.rowcount)

    def defer(self, due: Sequence[tuple[str, datetime]], owner: str) -> set[str]:
        """Hand leased deliveries back unsent, each due again at its own time, the claim's
        attempt undone; the ids ``owner`` still held. One statement: a busy destination
        defers hundreds at once, and a statement each kept outcomes from their record."""
        if not due:
            return set()
        dialect = self._dialect
        rows = self._sql.all(
            "UPDATE deliveries SET status = 'PENDING', attempts = attempts - 1,"  # noqa: S608
            " due_at = v.due_at, lease_owner = NULL, lease_until = NULL"
            f" FROM {dialect.table((('id', 'text'), ('due_at', 'time')))}"
            f" WHERE deliveries.id = v.id {_HELD} RETURNING deliveries.id",
            (*dialect.table_params([(i, dialect.time(at)) for i, at in due]), owner),
        )
        return {row[0] for row in rows}

    def renew(
        self, delivery_ids: Sequence[str], owner: str, lease_until: datetime, before: datetime
    ) -> int:
        """Extend ``owner``'s leases on these deliveries to ``lease_until``, those ending
        before ``before``; how many. Rows a recording transaction holds are skipped, not
        waited for: it is settling them, and waiting could deadlock with it."""
        if not delivery_ids:
            return 0
        cursor = self._sql.run(
            "UPDATE deliveries SET lease_until = ? WHERE id IN"  # noqa: S608
            f" (SELECT id FROM deliveries WHERE id = ANY(?) {_HELD} AND lease_until < ?"
            " FOR UPDATE SKIP LOCKED)",
            (
                self._dialect.time(lease_until),
                self._dialect.array(delivery_ids),
                owner,
                self._dialect.time(before),
            ),
        )
        return int(cursor.rowcount)


class Schedule(Repository):
    def __init__(self, sql: Sql, lock_notifications: Callable[[Sequence[str]], None]) -> None:
        super().__init__(sql)
        self._lock_notifications = lock_notifications

    def add_many(self, deliveries: Sequence[Delivery]) -> None:
        """Insert new deliveries in bulk, all or none (KeyError on a taken id)."""
        if not deliveries:
            return
        if not self._sql.hold(self._insert, deliveries):
            self._insert(deliveries)
        for (account_id, status), count in Counter(
            (d.account_id, d.status._value_) for d in deliveries
        ).items():
            self._sql.tally.deliveries(account_id, status, count)

    def _insert(self, deliveries: Sequence[Delivery]) -> None:
        # One statement over a derived table, whatever the number of rows (on SQLite
        # one prepared statement: binding beats 17 json_extract calls a row).
        dialect = self._dialect
        encode = DELIVERIES.codec(dialect).encode
        with self._sql.duplicate_as_key_error("delivery"):
            if dialect.executemany_is_bulk:
                self._sql.many(DELIVERIES.insert, [encode(d) for d in deliveries])
                return
            self._sql.run(
                f"INSERT INTO deliveries ({DELIVERIES.columns})"  # noqa: S608
                f" SELECT * FROM {dialect.table(DELIVERIES.kinds)}",
                dialect.table_params([encode(d) for d in deliveries]),
            )

    def fan_out(self, notification: Notification, stream_id: str, due_at: datetime) -> int:
        """One delivery per active subscriber device, in one INSERT ... SELECT."""
        # Done by the database, not row by row in Python: a 100,000-device send
        # must be accepted within a second. A delivery's id is internal; the pair
        # (notification, device) it is made of is unique and sorts sensibly.
        cursor = self._sql.run(
            "INSERT INTO deliveries (id, notification_id, account_id, device_id, status,"
            " due_at, attempts)"
            " SELECT 'dlv_' || substr(:n, 5) || '_' || substr(d.id, 5), :n, :a, d.id,"
            " 'PENDING', :due, 0"
            " FROM subscriptions AS s JOIN devices AS d ON d.account_id = s.account_id"
            " WHERE s.stream_id = :s AND d.is_active = TRUE",
            {
                "n": notification.id,
                "a": notification.account_id,
                "due": self._dialect.time(due_at),
                "s": stream_id,
            },
        )
        added = int(cursor.rowcount)
        self._sql.tally.deliveries(notification.account_id, "PENDING", added)
        return added

    def fan_out_again(
        self, notification: Notification, original_id: str, due_at: datetime, waiting: bool = False
    ) -> int:
        """One delivery per active device of every account the stream send
        ``original_id`` reached (its inbox entries: the subscribers at that send; with
        ``waiting``, also the owners of its devices still waiting for their local time)."""
        cursor = self._sql.run(
            "INSERT INTO deliveries (id, notification_id, account_id, device_id, status,"  # noqa: S608
            " due_at, attempts)"
            " SELECT 'dlv_' || substr(:n, 5) || '_' || substr(d.id, 5), :n, :a, d.id,"
            " 'PENDING', :due, 0 FROM devices AS d WHERE d.is_active = TRUE AND d.account_id IN"
            f" ({audience(waiting)})",
            {
                "n": notification.id,
                "a": notification.account_id,
                "due": self._dialect.time(due_at),
                "o": original_id,
            },
        )
        added = int(cursor.rowcount)
        self._sql.tally.deliveries(notification.account_id, "PENDING", added)
        return added

    def cancel_unsent(self, notification_id: str, reason: str) -> int:
        """Cancel the notification's PENDING deliveries never handed to a gateway."""
        rows = self._sql.all(
            "UPDATE deliveries SET status = 'CANCELLED', failure_reason = ?"
            " WHERE notification_id = ? AND status IN ('PENDING', 'HELD') AND attempts = 0"
            " RETURNING account_id",
            (reason, notification_id),
        )
        self._sql.tally.moved(rows, "PENDING", "CANCELLED")
        return len(rows)

    def reschedule_unsent(self, notification_id: str, due: datetime) -> None:
        """Move the notification's PENDING deliveries never handed to a gateway to ``due``."""
        self._sql.run(
            "UPDATE deliveries SET due_at = ?, status = 'PENDING'"
            " WHERE notification_id = ? AND status IN ('PENDING', 'HELD') AND attempts = 0",
            (self._dialect.time(due), notification_id),
        )

    def cancel_for_device(self, device_id: str, reason: str) -> Sequence[str]:
        """Cancel the device's PENDING deliveries; the notifications touched, locked."""
        # Their notifications are locked first: the caller goes on to settle
        # them, and a cancel holding one of them must not be left waiting for
        # these delivery rows in turn.
        touched = self._sql.all(
            "SELECT DISTINCT notification_id FROM deliveries"
            " WHERE device_id = ? AND status IN ('PENDING', 'HELD')",
            (device_id,),
        )
        self._lock_notifications(sorted(r[0] for r in touched))
        rows = self._sql.all(
            "UPDATE deliveries SET status = 'CANCELLED', failure_reason = ?"
            " WHERE device_id = ? AND status IN ('PENDING', 'HELD')"
            " RETURNING account_id, notification_id",
            (reason, device_id),
        )
        self._sql.tally.moved(rows, "PENDING", "CANCELLED")
        return sorted({r[1] for r in rows})

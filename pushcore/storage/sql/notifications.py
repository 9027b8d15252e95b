"""Notifications, and how their deliveries stand."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from datetime import datetime

from pushcore.domain.model import Delivery, DeliveryCounts, Notification, NotificationStats
from pushcore.domain.states import NotificationStatus
from pushcore.storage.records import DELIVERIES, NOTIFICATIONS, delivery_counts
from pushcore.storage.sql.accounts import Repository
from pushcore.storage.sql.counters import read_stats
from pushcore.storage.sql.dialect import Sql

OPEN = "status IN ('PENDING', 'IN_FLIGHT', 'HELD')"
_NONE = delivery_counts([])
# What changes of a notification after it is created (update_many, refresh), its
# id last, as positional values: SQLite binds them quicker than dicts, after
# every batch.
STATE = NOTIFICATIONS.part(
    "status", "failure_reason", "wake_at", "settled_at", "devices_targeted", "id"
)
_CHANGED, _ID = STATE.names[:-1], STATE.names.index("id")
_UPDATE = f"UPDATE notifications SET {', '.join(f'{c} = ?' for c in _CHANGED)} WHERE id = ?"  # noqa: S608
_SET_FROM_V = ", ".join(f"{c} = v.{c}" for c in _CHANGED)
# What a PATCH may change (its content, timing and targets) and the new revision.
CONTENT = NOTIFICATIONS.part(
    "title",
    "body",
    "icon_style",
    "sound",
    "priority",
    "delay",
    "custom_delay",
    "target_device_token",
    "metadata",
    "scheduled_at",
    "sender_name",
    "sender_icon",
    "devices_targeted",
    "wake_at",
    "revision",
    "renotify",
    "ttl",
    "expires_at",
    "deliver_at",
    "id",
)
_EDIT = f"UPDATE notifications SET {', '.join(f'{c} = ?' for c in CONTENT.names[:-1])} WHERE id = ?"  # noqa: S608


class Notifications(Repository):
    def __init__(self, sql: Sql) -> None:
        super().__init__(sql)
        # What lock_for_edit read (None: no row), good while the transaction's
        # changes stay at _locked_at: its own edits move that on, any other write
        # (a cancel, a reschedule, a held insert of deliveries) ends it.
        self._locked: dict[str, tuple[Notification | None, DeliveryCounts]] = {}
        self._locked_at = -1

    def add(self, notification: Notification) -> None:
        """Insert a new notification; KeyError if its id is taken (in a group commit:
        held, inserted with the group's others, see Transaction.grouped)."""
        if not self._sql.hold(self._insert, (notification,)):
            self._sql.insert_new(
                NOTIFICATIONS.insert,
                NOTIFICATIONS.codec(self._dialect).encode(notification),
                notification.id,
            )
        n = notification
        self._sql.tally.notification(n.account_id, n.status.value, n.created_at, n.settled_at)

    def add_many(self, notifications: Sequence[Notification]) -> None:
        """Insert new notifications in one statement; KeyError if an id is taken."""
        if not self._sql.hold(self._insert, notifications):
            self._insert(notifications)
        # Counted once per kind (a batch's 500 share one account, status and minute).
        kinds = Counter(
            (n.account_id, n.status._value_, n.created_at, n.settled_at) for n in notifications
        )
        for (account_id, status, created_at, settled_at), count in kinds.items():
            self._sql.tally.notification(account_id, status, created_at, settled_at, count)

    def _insert(self, notifications: Sequence[Notification]) -> None:
        dialect = self._dialect
        encode = NOTIFICATIONS.codec(dialect).encode
        rows = [encode(n) for n in notifications]
        with self._sql.duplicate_as_key_error("notification"):
            if dialect.executemany_is_bulk:
                self._sql.many(NOTIFICATIONS.insert, rows)
                return
            # One statement over a derived table: one plan, not one execution per row.
            self._sql.run(
                f"INSERT INTO notifications ({NOTIFICATIONS.columns})"  # noqa: S608
                f" SELECT * FROM {dialect.table(NOTIFICATIONS.kinds)}",
                dialect.table_params(rows),
            )

    def _select(self, where: str, *params: object) -> list[Notification]:
        rows = self._sql.select(NOTIFICATIONS.columns, "notifications", where, *params)
        decode = NOTIFICATIONS.codec(self._dialect).decode
        return [decode(r) for r in rows]

    def get(
        self, account_id: str, notification_id: str, *, for_update: bool = False
    ) -> Notification | None:
        """The notification with this id in this account, or None (locked: ``for_update``)."""
        # FOR UPDATE, not NO KEY UPDATE: a claim's KEY SHARE lock must wait.
        lock = self._sql.lock("FOR UPDATE") if for_update else ""
        found = self._select("id = ? AND account_id = ?" + lock, notification_id, account_id)
        return found[0] if found else None

    def lock_for_edit(self, notification_ids: Sequence[str]) -> None:
        """In a group commit: lock these notifications and read their delivery counts,
        two statements for all, for the group's edits to find (:meth:`editable`)."""
        ids = sorted(set(notification_ids))
        if self._sql.held is None or len(ids) < 2:
            # One alone reads as it did (editable): a list parameter, its JSON and
            # the GROUP BY of several cost a lone PATCH more than they save.
            return
        # Locked in id order like every notification lock: see Locks.notifications.
        found = {
            n.id: n
            for n in self._select(
                "id = ANY(?) ORDER BY id" + self._sql.lock("FOR UPDATE"), self._dialect.array(ids)
            )
        }
        # Read after the locks (on PostgreSQL a new statement sees every claim
        # committed before them; none can come after until the COMMIT).
        counts = Progress(self._sql).counts_many(ids)
        self._locked = {i: (found.get(i), counts.get(i, _NONE)) for i in ids}
        self._locked_at = self._sql.changes

    def editable(
        self, account_id: str, notification_id: str
    ) -> tuple[Notification | None, DeliveryCounts]:
        """The notification locked as :meth:`get` ``for_update`` locks it (None: not
        found), and its delivery counts: as :meth:`lock_for_edit` read them while
        nothing else wrote since, else read now."""
        if self._sql.held is not None and self._sql.changes == self._locked_at:
            known = self._locked.get(notification_id)
            if known is not None:
                found, counts = known
                if found is None or found.account_id != account_id:
                    return None, counts
                return found, counts
        found = self.get(account_id, notification_id, for_update=True)
        return found, Progress(self._sql).counts(notification_id)

    def by_ids(self, notification_ids: Sequence[str]) -> Sequence[Notification]:
        """The notifications with these ids (any account), in id order."""
        return self._select("id = ANY(?) ORDER BY id", self._dialect.array(notification_ids))

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
        """The account's notifications, newest first, after the cursor."""
        where, params = "account_id = ?", [account_id]
        if status is not None:
            where += " AND status = ?"
            params.append(status.value)
        if collapse_key is not None:
            where += " AND collapse_key = ?"
            params.append(collapse_key)
        if stream_id is not None:
            where += " AND stream_id = ?"
            params.append(stream_id)
        if schedule_id is not None:
            where += " AND schedule_id = ?"
            params.append(schedule_id)
        if before_id is not None:
            where += " AND id < ?"
            params.append(before_id)
        return self._select(where + " ORDER BY id DESC LIMIT ?", *params, limit)

    def open_with_key(
        self, account_id: str, collapse_key: str, newer_id: str
    ) -> Sequence[Notification]:
        """The account's QUEUED or SCHEDULED notifications with this collapse key other
        than ``newer_id``, locked as a PATCH locks one (a claim waits), in id order."""
        where = (
            "account_id = ? AND (collapse_key = ? OR id = ?) AND id <> ?"
            " AND status IN ('QUEUED', 'SCHEDULED') ORDER BY id"
        )
        lock = self._sql.lock("FOR UPDATE")
        # A key that is a notification's id names it too (a /replace of one without a key).
        return self._select(where + lock, account_id, collapse_key, collapse_key, newer_id)

    def update(self, notification: Notification) -> None:
        """Store the changed state."""
        self.update_many([notification])

    def edit(self, notification: Notification) -> None:
        """Store an edited notification's content, timing, targets and revision (in a
        group commit: held, sent with the group's others, see Transaction.grouped)."""
        row = CONTENT.codec(self._dialect).encode(notification)
        fresh = self._sql.changes == self._locked_at
        if not self._sql.hold(self._send_edits, (row,)):
            self._sql.run(_EDIT, row)
        if fresh:
            # This one is read again if edited again (after this UPDATE went out);
            # what was read of the others stands.
            self._locked.pop(notification.id, None)
            self._locked_at = self._sql.changes

    def _send_edits(self, rows: Sequence[Sequence[object]]) -> None:
        # One row per notification at most: a second edit of one reads it again
        # first (editable), which sends the first edit's UPDATE.
        self._sql.many(_EDIT, rows)

    def _count_changes(
        self, notifications: Sequence[Notification], known: Sequence[Notification]
    ) -> None:
        # The counts follow (status, settled_at) from what is stored now, read
        # under the lock the caller's decision already holds (taken again: free),
        # unless the caller read them so already (``known``: the engine's roll-up).
        read = self._dialect.opt_read_time
        stored = {n.id: (n.account_id, n.status.value, n.settled_at) for n in known}
        missing = [n.id for n in notifications if n.id not in stored]
        if missing:
            lock = self._sql.lock("FOR NO KEY UPDATE")
            stored.update(
                (row[0], (row[1], row[2], read(row[3])))
                for row in self._sql.select(
                    "id, account_id, status, settled_at",
                    "notifications",
                    "id = ANY(?) ORDER BY id" + lock,
                    self._dialect.array(missing),
                )
            )
        for n in notifications:
            old = stored.get(n.id)
            if old is not None:
                account_id, status, settled_at = old
                self._sql.tally.changed(
                    account_id, (status, settled_at), (n.status.value, n.settled_at)
                )

    def update_many(
        self, notifications: Sequence[Notification], stored: Sequence[Notification] = ()
    ) -> None:
        """Store the changed state of several at once (``stored``: see the port)."""
        if not notifications:
            return
        self._count_changes(notifications, stored)
        dialect = self._dialect
        # Only what changes: a whole row would encode the metadata again.
        encode = STATE.codec(dialect).encode
        rows = [encode(n) for n in notifications]
        if dialect.executemany_is_bulk and len(rows) == 1:
            self._sql.run(_UPDATE, rows[0])
            return
        # Several: one statement on SQLite as well. An executemany steps once a row, and
        # each step lets the interpreter lock go: with the event loop busy, taking it back
        # waits up to a switch interval (5 ms), and a roll-up of 128 held the writer for
        # 86-196 ms during a burst (docs/benchmarks.md, "Event webhooks: beside the
        # engine", 2026-11-28).
        self._sql.run(
            f"UPDATE notifications SET {_SET_FROM_V} FROM {dialect.table(STATE.kinds)}"  # noqa: S608
            " WHERE notifications.id = v.id",
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
            STATE.columns,
            "notifications",
            "id = ANY(?) ORDER BY id" + lock,
            self._dialect.array([n.id for n in notifications]),
        )
        stored = {row[_ID]: tuple(row) for row in rows}
        fresh: list[Notification] = []
        state = STATE.codec(self._dialect)
        for n in notifications:
            row = stored.get(n.id)
            if row is None or row == state.encode(n):
                # Gone, or unchanged: making every object again costs more than comparing.
                fresh += [] if row is None else [n]
                continue
            fresh.append(state.merge(n, row))
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
        return self._select(where + lock, account_id, token, self._dialect.time(now))

    def due_wakeups(self, now: datetime, limit: int) -> Sequence[Notification]:
        """Notifications whose wake_at has come, earliest first (those no other writer holds)."""
        where = "wake_at IS NOT NULL AND wake_at <= ? ORDER BY wake_at, id LIMIT ?"
        lock = self._sql.lock("FOR NO KEY UPDATE SKIP LOCKED")
        return self._select(where + lock, self._dialect.time(now), limit)

    def next_wake_at(self) -> datetime | None:
        """The earliest wake_at, or None."""
        (value,) = self._sql.one("SELECT MIN(wake_at) FROM notifications WHERE wake_at IS NOT NULL")
        return self._dialect.opt_read_time(value)

    def stats(self, account_id: str, since: datetime) -> NotificationStats:
        """Counts by status, delivery counts, and the activity since ``since``'s minute."""
        # Kept as they change (counters.py): the cost does not grow with history.
        return read_stats(self._sql, account_id, since)


# Deliveries, not people: each opened delivery counts (receipts, migration 0025).
_OPENED = "COUNT(*) FILTER (WHERE opened_at IS NOT NULL)"


class Progress(Repository):
    def counts(self, notification_id: str) -> DeliveryCounts:
        """How the notification's deliveries stand."""
        rows = self._sql.all(
            f"SELECT status, COUNT(*), COUNT(*) FILTER (WHERE attempts > 0), {_OPENED}"  # noqa: S608
            " FROM deliveries WHERE notification_id = ? GROUP BY status",
            (notification_id,),
        )
        return delivery_counts(rows)

    def counts_many(self, notification_ids: Sequence[str]) -> dict[str, DeliveryCounts]:
        """Counts of several notifications in one query."""
        rows = self._sql.all(
            "SELECT notification_id, status, COUNT(*), COUNT(*) FILTER (WHERE attempts > 0),"  # noqa: S608
            f" {_OPENED} FROM deliveries WHERE notification_id = ANY(?)"
            " GROUP BY notification_id, status",
            (self._dialect.array(notification_ids),),
        )
        grouped: dict[str, list[tuple[str, int, int, int]]] = {}
        for notification_id, status, count, handed, opened in rows:
            grouped.setdefault(notification_id, []).append((status, count, handed, opened))
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
            f"SELECT n.value FROM {self._dialect.list_table('n')} WHERE EXISTS"  # noqa: S608
            f" (SELECT 1 FROM deliveries WHERE notification_id = n.value AND {OPEN})",
            (self._dialect.array(notification_ids),),
        )
        return {r[0] for r in rows}

    def for_notification(self, notification_id: str) -> Sequence[Delivery]:
        """The notification's deliveries, in id order."""
        where = "notification_id = ? ORDER BY id"
        rows = self._sql.select(DELIVERIES.columns, "deliveries", where, notification_id)
        decode = DELIVERIES.codec(self._dialect).decode
        return [decode(r) for r in rows]

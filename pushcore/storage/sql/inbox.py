"""Inbox entries: written as notifications fall due, paged, marked read, dismissed.

Entries are numbered by the database as they are inserted (``seq``). So that
the numbers follow the order of COMMITs, a transaction takes the inbox's turn
before its first entry: PostgreSQL's writers run at once, and two claims
could otherwise commit numbers 7 and 6 in that order, and a live channel
that had shown 7 would never show 6. SQLite's one writer takes turns anyway.
The turn is held to COMMIT, so callers write entries last.

An entry's public id (``public_id``) is its creation time and a random tail the
database draws per row (pushcore/domain/inbox.py); ``seq`` never leaves here.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime

from pushcore.domain.inbox import (
    Dismissed,
    InboxChange,
    InboxItem,
    Read,
    Withdrawn,
    entry_id_prefix,
)
from pushcore.domain.model import Notification
from pushcore.storage.records import INBOX, NOTIFICATIONS
from pushcore.storage.sql.accounts import Repository
from pushcore.storage.sql.dialect import Sql
from pushcore.storage.sql.inbox_replace import RETIRE_ORIGINAL, SHOWN, audience, replace_older

# An advisory lock namespace of its own (see transaction.py for the others).
INBOX_LOCK = 0x70757368 + 3
# Entries first, then their notifications once each: a stream send's thousands of
# entries share one notification, whose row a join would fetch again for every entry.
_ENTRY = (
    f"SELECT {INBOX.prefixed('i')} FROM inbox AS i"  # noqa: S608
    " WHERE i.dismissed_at IS NULL AND "
)
_NOTIFIED = f"SELECT {NOTIFICATIONS.columns} FROM notifications WHERE id = ANY(?)"  # noqa: S608
_UNREAD = "read_at IS NULL AND dismissed_at IS NULL"


class Inbox(Repository):
    def __init__(self, sql: Sql) -> None:
        super().__init__(sql)
        self._turn = False

    def _take_turn(self) -> None:
        """Hold the inbox's turn until COMMIT (once a transaction), and have listeners
        told at COMMIT."""
        if self._turn:
            return
        self._turn = True
        dialect = self._dialect
        if self._sql.locking and dialect.advisory_lock is not None:
            self._sql.run(dialect.advisory_lock, (INBOX_LOCK, "inbox"))
        if dialect.inbox_notify is not None:
            # PostgreSQL delivers a NOTIFY at COMMIT, and drops it on ROLLBACK.
            self._sql.run(dialect.inbox_notify, ("",))

    def deliver_own(self, notification_ids: Sequence[str], now: datetime) -> int:
        """Entries of the owners' own notifications (due: the caller knows) not yet in
        their inboxes."""
        if not notification_ids:
            return 0
        self._take_turn()
        at = self._dialect.time(now)
        # The notification's row is read here, not trusted from the caller: a
        # cancel committed since is seen (and a cancelled one never gets in).
        # Nor a withdrawn or expired one (a retry of a withdrawn one's delivery).
        cursor = self._sql.run(
            "INSERT INTO inbox (public_id, account_id, notification_id, delivered_at,"  # noqa: S608
            f" expires_at) SELECT ? || {self._dialect.id_tail}, n.account_id, n.id,"
            " CASE WHEN n.scheduled_at > ? THEN n.scheduled_at"
            " ELSE ? END, n.expires_at FROM notifications AS n WHERE n.id = ANY(?)"
            " AND n.stream_id IS NULL AND n.status <> 'CANCELLED' AND n.withdrawn_at IS NULL"
            " AND (n.expires_at IS NULL OR n.expires_at > ?)"
            " ORDER BY n.scheduled_at, n.id"
            " ON CONFLICT (notification_id, account_id) DO NOTHING",
            (entry_id_prefix(now), at, at, self._dialect.array(sorted(notification_ids)), at),
        )
        return int(cursor.rowcount)

    def deliver_local(self, delivery_ids: Sequence[str], now: datetime) -> int:
        """Entries, at ``now``, for the owners of these claimed deliveries' devices
        (local-time stream sends, whose subscribers' entries wait for their own times)
        not yet in their inboxes."""
        if not delivery_ids:
            return 0
        self._take_turn()
        at = self._dialect.time(now)
        cursor = self._sql.run(
            "INSERT INTO inbox (public_id, account_id, notification_id, delivered_at,"  # noqa: S608
            f" expires_at) SELECT ? || {self._dialect.id_tail}, dv.account_id, n.id, ?,"
            " MIN(n.expires_at) FROM deliveries AS d JOIN devices AS dv ON dv.id = d.device_id"
            " JOIN notifications AS n ON n.id = d.notification_id WHERE d.id = ANY(?)"
            " AND n.status <> 'CANCELLED' AND n.withdrawn_at IS NULL"
            " AND (n.expires_at IS NULL OR n.expires_at > ?)"
            " GROUP BY dv.account_id, n.id ORDER BY dv.account_id, n.id"
            " ON CONFLICT (notification_id, account_id) DO NOTHING",
            (entry_id_prefix(now), at, self._dialect.array(sorted(delivery_ids)), at),
        )
        return int(cursor.rowcount)

    def fan_out(self, notification: Notification, stream_id: str, at: datetime) -> int:
        """An entry per subscriber of the stream, inserted by the database in one go."""
        self._take_turn()
        cursor = self._sql.run(
            "INSERT INTO inbox (public_id, account_id, notification_id, delivered_at,"  # noqa: S608
            f" expires_at) SELECT ? || {self._dialect.id_tail}, s.account_id, ?, ?, ?"
            " FROM subscriptions AS s WHERE s.stream_id = ? ORDER BY s.account_id",
            (
                entry_id_prefix(at),
                notification.id,
                self._dialect.time(at),
                self._dialect.opt_time(notification.expires_at),
                stream_id,
            ),
        )
        return int(cursor.rowcount)

    def fan_out_again(
        self, notification: Notification, original_id: str, at: datetime, waiting: bool = False
    ) -> int:
        """An entry of ``notification`` for every account that has one of ``original_id``
        (with ``waiting``, also for those it waits for: a local-time send's), each in the
        place of its account's entry of ``original_id`` where that one is still shown."""
        self._take_turn()
        dialect = self._dialect
        params = {
            "p": entry_id_prefix(at),
            "n": notification.id,
            "at": dialect.time(at),
            "e": dialect.opt_time(notification.expires_at),
            "o": original_id,
        }
        # The original's entry is each account's latest with the key wherever it is still
        # shown (inbox_replace.py keeps one shown per key): the new entry names it as it
        # is written, in one statement, and the rest are left to replace_older.
        cursor = self._sql.run(
            "INSERT INTO inbox (public_id, account_id, notification_id, delivered_at,"  # noqa: S608
            f" expires_at, replaces, read_at) SELECT :p || {dialect.id_tail}, r.account_id,"
            f" :n, :at, :e, o.public_id, {'NULL' if notification.renotify else 'o.read_at'}"
            f" FROM ({audience(waiting)}) AS r LEFT JOIN inbox AS o"
            f" ON o.notification_id = :o AND o.account_id = r.account_id AND {SHOWN}"
            " ORDER BY r.account_id",
            params,
        )
        self._sql.run(RETIRE_ORIGINAL, {"at": params["at"], "o": original_id})
        return int(cursor.rowcount)

    def replace_older(self, notifications: Sequence[Notification], now: datetime) -> int:
        """Entries of these (just written) replace the older entries with their collapse
        keys; how many older entries left. Call after writing the new entries."""
        return sum(replace_older(self._sql, n, now) for n in notifications if n.collapse_key)

    def _items(self, where: str, *params: object) -> list[InboxItem]:
        entry = INBOX.codec(self._dialect).decode
        entries = [entry(row) for row in self._sql.all(_ENTRY + where, params)]
        if not entries:
            return []
        ids = sorted({e.notification_id for e in entries})
        decode = NOTIFICATIONS.codec(self._dialect).decode
        rows = self._sql.all(_NOTIFIED, (self._dialect.array(ids),))
        notifications = {n.id: n for n in map(decode, rows)}
        # Read in one snapshot, and retention removes entries before their
        # notification: each is found (the check keeps a join's meaning).
        return [
            InboxItem(e, notifications[e.notification_id])
            for e in entries
            if e.notification_id in notifications
        ]

    def page(
        self, account_id: str, limit: int, before: int | None, unread_only: bool
    ) -> Sequence[InboxItem]:
        """The account's entries, newest first, below ``before``."""
        where, params = "i.account_id = ?", list[object]([account_id])
        if unread_only:
            where += " AND i.read_at IS NULL"
        if before is not None:
            where += " AND i.seq < ?"
            params.append(before)
        return self._items(where + " ORDER BY i.seq DESC LIMIT ?", *params, limit)

    def after(self, account_ids: Sequence[str] | None, seq: int, limit: int) -> Sequence[InboxItem]:
        """Entries of these accounts (None: of all) after ``seq``, oldest first."""
        if account_ids is None:
            return self._items("i.seq > ? ORDER BY i.seq LIMIT ?", seq, limit)
        if not account_ids:
            return []
        return self._items(
            "i.account_id = ANY(?) AND i.seq > ? ORDER BY i.seq LIMIT ?",
            self._dialect.array(sorted(account_ids)),
            seq,
            limit,
        )

    def position(self, account_id: str, public_id: str) -> tuple[int, bool]:
        """The position of the account's entry ``public_id`` and True; when the account
        has no such entry (gone by retention, or never its own), the position of its
        latest entry created before it by the time in the id (0 if none) and False."""
        found = self._sql.all(
            "SELECT seq FROM inbox WHERE account_id = ? AND public_id = ?",
            (account_id, public_id),
        )
        if found:
            return int(found[0][0]), True
        (seq,) = self._sql.one(
            "SELECT MAX(seq) FROM inbox WHERE account_id = ? AND public_id < ?",
            (account_id, public_id),
        )
        return int(seq or 0), False

    def last_seq(self) -> int:
        """The latest entry's number, or 0."""
        (value,) = self._sql.one("SELECT MAX(seq) FROM inbox")
        return int(value or 0)

    def unread(self, account_id: str) -> int:
        """The account's unread entries."""
        (count,) = self._sql.one(
            f"SELECT COUNT(*) FROM inbox WHERE account_id = ? AND {_UNREAD}",  # noqa: S608
            (account_id,),
        )
        return int(count)

    def mark_read(self, account_id: str, ids: Sequence[str], at: datetime) -> list[str]:
        """Mark these unread entries read; the ids marked, oldest first."""
        if not ids:
            return []
        return self._read(" AND public_id = ANY(?)", account_id, at, self._dialect.array(ids))

    def mark_read_up_to(self, account_id: str, seq: int, at: datetime) -> list[str]:
        """Mark the unread entries up to position ``seq`` read; the ids marked."""
        return self._read(" AND seq <= ?", account_id, at, seq)

    def _read(self, where: str, account_id: str, at: datetime, value: object) -> list[str]:
        rows = self._sql.all(
            f"UPDATE inbox SET read_at = ? WHERE account_id = ? AND {_UNREAD}{where}"  # noqa: S608
            " RETURNING seq, public_id",
            (self._dialect.time(at), account_id, value),
        )
        return [str(r[1]) for r in sorted(rows)]

    def announce(self, account_id: str, change: InboxChange) -> bool:
        """Tell every process's live channels at COMMIT; False where the database cannot."""
        statement = self._dialect.inbox_notify
        if statement is None:
            return False
        for payload in change_payloads(account_id, change):
            self._sql.run(statement, (payload,))
        return True

    def withdraw(self, notification_ids: Sequence[str]) -> dict[str, list[str]]:
        """Take these notifications' entries out of every inbox; their ids by account."""
        if not notification_ids:
            return {}
        rows = self._sql.all(
            "DELETE FROM inbox WHERE notification_id = ANY(?) RETURNING account_id, public_id",
            (self._dialect.array(sorted(notification_ids)),),
        )
        return _by_account(rows)

    def expire(self, now: datetime, limit: int) -> dict[str, list[str]]:
        """Take up to ``limit`` entries past their expiry out of the inboxes; ids by account."""
        rows = self._sql.all(
            "DELETE FROM inbox WHERE seq IN (SELECT seq FROM inbox INDEXED BY inbox_expiry"  # noqa: S608
            " WHERE expires_at <= ? ORDER BY expires_at LIMIT ?"
            + self._sql.lock("FOR UPDATE SKIP LOCKED")
            + ") RETURNING account_id, public_id",
            (self._dialect.time(now), limit),
        )
        return _by_account(rows)

    def dismiss(self, account_id: str, public_id: str, at: datetime) -> bool:
        """Dismiss the account's entry; whether it had one (not dismissed already)."""
        cursor = self._sql.run(
            "UPDATE inbox SET dismissed_at = ? WHERE account_id = ? AND public_id = ?"
            " AND dismissed_at IS NULL",
            (self._dialect.time(at), account_id, public_id),
        )
        return bool(cursor.rowcount > 0)


def _by_account(rows: Sequence[tuple[object, ...]]) -> dict[str, list[str]]:
    taken: dict[str, list[str]] = {}
    for account_id, public_id in rows:
        taken.setdefault(str(account_id), []).append(str(public_id))
    return {account: sorted(ids) for account, ids in taken.items()}


# A NOTIFY payload must stay under 8000 bytes: a long read goes in several.
_PAYLOAD_IDS = 150  # ids of 36 characters, quoted: under 6,000 bytes


def change_payloads(account_id: str, change: InboxChange) -> list[str]:
    """The NOTIFY payloads of a read or a dismissal (:func:`read_change` reads one)."""
    if isinstance(change, Dismissed):
        return [json.dumps({"account": account_id, "dismissed": change.id})]
    if isinstance(change, Withdrawn):
        return [
            json.dumps({"account": account_id, "withdrawn": change.ids[i : i + _PAYLOAD_IDS]})
            for i in range(0, len(change.ids), _PAYLOAD_IDS)
        ]
    return [
        json.dumps(
            {
                "account": account_id,
                "read": change.ids[i : i + _PAYLOAD_IDS],
                "unread": change.unread,
            }
        )
        for i in range(0, len(change.ids), _PAYLOAD_IDS)
    ]


def read_change(payload: str) -> tuple[str, InboxChange] | None:
    """The account and change of a payload of :func:`change_payloads`; None for the empty
    payload of new entries (or anything else)."""
    try:
        data = json.loads(payload) if payload else None
        if isinstance(data, dict) and "dismissed" in data:
            return str(data["account"]), Dismissed(str(data["dismissed"]))
        if isinstance(data, dict) and "withdrawn" in data:
            return str(data["account"]), Withdrawn(tuple(str(i) for i in data["withdrawn"]))
        if isinstance(data, dict) and "read" in data:
            ids = tuple(str(i) for i in data["read"])
            return str(data["account"]), Read(ids, int(data["unread"]))
    except (ValueError, KeyError, TypeError):
        pass
    return None

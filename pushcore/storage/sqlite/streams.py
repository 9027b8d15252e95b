"""SQLite repositories of streams and subscriptions."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from datetime import datetime

from pushcore.domain.model import Device, Stream, StreamView, Subscription
from pushcore.storage.records import DEVICE_COLUMNS, prefixed
from pushcore.storage.sqlite.repos import Repository
from pushcore.storage.sqlite.rows import (
    ROWS,
    duplicate_as_key_error,
    from_ms,
    to_ms,
)

# The live subscriber count travels with the stream: every API view shows it.
_VIEW = (
    "SELECT s.id, s.account_id, s.name, s.code, s.description, s.icon_url, s.created_at,"
    " (SELECT COUNT(*) FROM subscriptions AS c WHERE c.stream_id = s.id)"
    " FROM streams AS s WHERE s.deleted_at IS NULL"
)


def _view(row: sqlite3.Row | tuple[object, ...]) -> StreamView:
    id_, account_id, name, code, description, icon_url, created_at, subscribers = tuple(row)
    stream = Stream(
        id=str(id_),
        account_id=str(account_id),
        name=str(name),
        code=str(code),
        description=str(description),
        icon_url=None if icon_url is None else str(icon_url),
        created_at=from_ms(int(created_at)),
    )
    return StreamView(stream, int(subscribers))


class Streams(Repository):
    def add(self, stream: Stream) -> None:
        """Insert; KeyError when the code was ever used."""
        with duplicate_as_key_error(stream.code):
            self._conn.execute(
                "INSERT INTO streams (id, account_id, name, code, description, icon_url,"
                " created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    stream.id,
                    stream.account_id,
                    stream.name,
                    stream.code,
                    stream.description,
                    stream.icon_url,
                    to_ms(stream.created_at),
                ),
            )

    def get(self, account_id: str, stream_id: str) -> StreamView | None:
        """The account's live stream, or None."""
        row = self._conn.execute(
            _VIEW + " AND s.id = ? AND s.account_id = ?", (stream_id, account_id)
        ).fetchone()
        return None if row is None else _view(row)

    def by_code(self, code: str) -> StreamView | None:
        """The live stream with this code, or None."""
        row = self._conn.execute(_VIEW + " AND s.code = ?", (code,)).fetchone()
        return None if row is None else _view(row)

    def list(self, account_id: str) -> Sequence[StreamView]:
        """The account's live streams, newest first."""
        rows = self._conn.execute(
            _VIEW + " AND s.account_id = ? ORDER BY s.id DESC", (account_id,)
        ).fetchall()
        return [_view(r) for r in rows]

    def count(self, account_id: str) -> int:
        """How many live streams the account has."""
        (count,) = self._conn.execute(
            "SELECT COUNT(*) FROM streams WHERE account_id = ? AND deleted_at IS NULL",
            (account_id,),
        ).fetchone()
        return int(count)

    def delete(self, account_id: str, stream_id: str, at: datetime) -> bool:
        """Mark deleted (the code stays taken) and remove its subscriptions."""
        cursor = self._conn.execute(
            "UPDATE streams SET deleted_at = ? WHERE id = ? AND account_id = ?"
            " AND deleted_at IS NULL",
            (to_ms(at), stream_id, account_id),
        )
        if cursor.rowcount == 0:
            return False
        self._conn.execute("DELETE FROM subscriptions WHERE stream_id = ?", (stream_id,))
        return True

    def subscriber_devices(self, stream_id: str) -> Sequence[Device]:
        """Active devices of the stream's subscribers."""
        rows = self._conn.execute(
            f"SELECT {prefixed(DEVICE_COLUMNS, 'd')} FROM subscriptions AS s JOIN devices AS d"  # noqa: S608
            " ON d.account_id = s.account_id WHERE s.stream_id = ? AND d.is_active = 1",
            (stream_id,),
        ).fetchall()
        return [ROWS.device_from_row(r) for r in rows]


def _subscription(row: sqlite3.Row | tuple[object, ...]) -> Subscription:
    id_, account_id, stream_id, created_at = tuple(row)[:4]
    return Subscription(str(id_), str(account_id), str(stream_id), from_ms(int(created_at)))


class Subscriptions(Repository):
    def add(self, subscription: Subscription) -> None:
        """Insert; KeyError when the account already subscribes to the stream."""
        with duplicate_as_key_error(subscription.stream_id):
            self._conn.execute(
                "INSERT INTO subscriptions (id, account_id, stream_id, created_at)"
                " VALUES (?, ?, ?, ?)",
                (
                    subscription.id,
                    subscription.account_id,
                    subscription.stream_id,
                    to_ms(subscription.created_at),
                ),
            )

    def get(self, account_id: str, subscription_id: str) -> Subscription | None:
        """The account's subscription, or None."""
        rows = self._rows(
            "id, account_id, stream_id, created_at",
            "subscriptions",
            "id = ? AND account_id = ?",
            subscription_id,
            account_id,
        )
        return _subscription(rows[0]) if rows else None

    def find(self, account_id: str, stream_id: str) -> Subscription | None:
        """The account's subscription to the stream, or None."""
        rows = self._rows(
            "id, account_id, stream_id, created_at",
            "subscriptions",
            "account_id = ? AND stream_id = ?",
            account_id,
            stream_id,
        )
        return _subscription(rows[0]) if rows else None

    def list(self, account_id: str) -> Sequence[tuple[Subscription, StreamView]]:
        """The account's subscriptions with their streams, newest first."""
        sql = (
            "SELECT sub.id, sub.account_id, sub.stream_id, sub.created_at, v.*"  # noqa: S608
            f" FROM subscriptions AS sub JOIN ({_VIEW}) AS v ON v.id = sub.stream_id"
            " WHERE sub.account_id = ? ORDER BY sub.id DESC"
        )
        rows = self._conn.execute(sql, (account_id,)).fetchall()
        return [(_subscription(r), _view(tuple(r)[4:])) for r in rows]

    def delete(self, account_id: str, subscription_id: str) -> bool:
        """Remove the subscription; False when there is none."""
        cursor = self._conn.execute(
            "DELETE FROM subscriptions WHERE id = ? AND account_id = ?",
            (subscription_id, account_id),
        )
        return cursor.rowcount > 0

"""PostgreSQL repositories of streams and subscriptions."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from pushcore.domain.model import Device, Stream, StreamView, Subscription
from pushcore.storage.postgres.repos import STREAM_PLAN_LOCK, Repository
from pushcore.storage.postgres.rows import ROWS, Row, ts
from pushcore.storage.records import DEVICE_COLUMNS, prefixed

# The live subscriber count travels with the stream: every API view shows it.
_VIEW = (
    "SELECT s.id, s.account_id, s.name, s.code, s.description, s.icon_url, s.created_at,"
    " (SELECT COUNT(*) FROM subscriptions AS c WHERE c.stream_id = s.id)"
    " FROM streams AS s WHERE s.deleted_at IS NULL"
)
_SUBSCRIPTION_COLUMNS = "id, account_id, stream_id, created_at"


def _view(row: Row) -> StreamView:
    id_, account_id, name, code, description, icon_url, created_at, subscribers = row
    stream = Stream(id_, account_id, name, code, description, icon_url, created_at)
    return StreamView(stream, subscribers)


class Streams(Repository):
    def add(self, stream: Stream) -> None:
        """Insert; KeyError when the code (or id) was ever used."""
        self._insert_new(
            "INSERT INTO streams (id, account_id, name, code, description, icon_url, created_at)"
            " VALUES (%(id)s, %(account_id)s, %(name)s, %(code)s, %(description)s,"
            " %(icon_url)s, %(created_at)s)",
            {
                "id": stream.id,
                "account_id": stream.account_id,
                "name": stream.name,
                "code": stream.code,
                "description": stream.description,
                "icon_url": stream.icon_url,
                "created_at": ts(stream.created_at),
            },
            stream.code,
        )

    def get(self, account_id: str, stream_id: str) -> StreamView | None:
        """The account's live stream, or None."""
        row = self._conn.execute(
            _VIEW + " AND s.id = %s AND s.account_id = %s", (stream_id, account_id)
        ).fetchone()
        return None if row is None else _view(row)

    def by_code(self, code: str) -> StreamView | None:
        """The live stream with this code, or None."""
        row = self._conn.execute(_VIEW + " AND s.code = %s", (code,)).fetchone()
        return None if row is None else _view(row)

    def list(self, account_id: str) -> Sequence[StreamView]:
        """The account's live streams, newest first."""
        rows = self._conn.execute(
            _VIEW + " AND s.account_id = %s ORDER BY s.id DESC", (account_id,)
        ).fetchall()
        return [_view(r) for r in rows]

    def count(self, account_id: str) -> int:
        """How many live streams the account has.

        A write transaction first takes the account's stream lock, held to
        its end: the count is for a plan-limit check followed by an insert,
        and a second creator must count only after the first has committed.
        The account row cannot serve as the lock, as it may not exist yet.
        """
        self._lock(STREAM_PLAN_LOCK, account_id)
        row = self._conn.execute(
            "SELECT COUNT(*) FROM streams WHERE account_id = %s AND deleted_at IS NULL",
            (account_id,),
        ).fetchone()
        assert row is not None  # an aggregate always has its row
        return int(row[0])

    def delete(self, account_id: str, stream_id: str, at: datetime) -> bool:
        """Mark deleted (the code stays taken) and remove its subscriptions."""
        cursor = self._conn.execute(
            "UPDATE streams SET deleted_at = %s WHERE id = %s AND account_id = %s"
            " AND deleted_at IS NULL",
            (ts(at), stream_id, account_id),
        )
        if cursor.rowcount == 0:
            return False
        self._conn.execute("DELETE FROM subscriptions WHERE stream_id = %s", (stream_id,))
        return True

    def subscriber_devices(self, stream_id: str) -> Sequence[Device]:
        """Active devices of the stream's subscribers."""
        rows = self._conn.execute(
            f"SELECT {prefixed(DEVICE_COLUMNS, 'd')} FROM subscriptions AS s"  # noqa: S608
            " JOIN devices AS d ON d.account_id = s.account_id"
            " WHERE s.stream_id = %s AND d.is_active",
            (stream_id,),
        ).fetchall()
        return [ROWS.device_from_row(r) for r in rows]


def _subscription(row: Row) -> Subscription:
    id_, account_id, stream_id, created_at = row[:4]
    return Subscription(id_, account_id, stream_id, created_at)


class Subscriptions(Repository):
    def add(self, subscription: Subscription) -> None:
        """Insert; KeyError when the account already subscribes to the stream."""
        self._insert_new(
            "INSERT INTO subscriptions (id, account_id, stream_id, created_at)"
            " VALUES (%(id)s, %(account_id)s, %(stream_id)s, %(created_at)s)",
            {
                "id": subscription.id,
                "account_id": subscription.account_id,
                "stream_id": subscription.stream_id,
                "created_at": ts(subscription.created_at),
            },
            subscription.stream_id,
        )

    def get(self, account_id: str, subscription_id: str) -> Subscription | None:
        """The account's subscription, or None."""
        where = "id = %s AND account_id = %s"
        rows = self._rows(
            _SUBSCRIPTION_COLUMNS, "subscriptions", where, subscription_id, account_id
        )
        return _subscription(rows[0]) if rows else None

    def find(self, account_id: str, stream_id: str) -> Subscription | None:
        """The account's subscription to the stream, or None."""
        where = "account_id = %s AND stream_id = %s"
        rows = self._rows(_SUBSCRIPTION_COLUMNS, "subscriptions", where, account_id, stream_id)
        return _subscription(rows[0]) if rows else None

    def list(self, account_id: str) -> Sequence[tuple[Subscription, StreamView]]:
        """The account's subscriptions with their streams, newest first."""
        sql = (
            "SELECT sub.id, sub.account_id, sub.stream_id, sub.created_at, v.*"  # noqa: S608
            f" FROM subscriptions AS sub JOIN ({_VIEW}) AS v ON v.id = sub.stream_id"
            " WHERE sub.account_id = %s ORDER BY sub.id DESC"
        )
        rows = self._conn.execute(sql, (account_id,)).fetchall()
        return [(_subscription(r), _view(r[4:])) for r in rows]

    def delete(self, account_id: str, subscription_id: str) -> bool:
        """Remove the subscription; False when there is none."""
        cursor = self._conn.execute(
            "DELETE FROM subscriptions WHERE id = %s AND account_id = %s",
            (subscription_id, account_id),
        )
        return cursor.rowcount > 0

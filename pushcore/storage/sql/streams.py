"""Streams and subscriptions."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from pushcore.domain.model import Device, Stream, StreamView, Subscription
from pushcore.storage.records import DEVICE_COLUMNS, Rows, prefixed
from pushcore.storage.sql.accounts import Repository

# The live subscriber count travels with the stream: every API view shows it.
_VIEW = (
    "SELECT s.id, s.account_id, s.name, s.code, s.description, s.icon_url, s.created_at,"
    " (SELECT COUNT(*) FROM subscriptions AS c WHERE c.stream_id = s.id)"
    " FROM streams AS s WHERE s.deleted_at IS NULL"
)
_SUBSCRIPTION_COLUMNS = "id, account_id, stream_id, created_at"


def _view(rows: Rows, row: Sequence[Any]) -> StreamView:
    id_, account_id, name, code, description, icon_url, created_at, subscribers = row
    created = rows.read_time(created_at)
    return StreamView(
        Stream(id_, account_id, name, code, description, icon_url, created), subscribers
    )


class Streams(Repository):
    def _views(self, where: str, *params: object) -> list[StreamView]:
        return [_view(self._rows, r) for r in self._sql.all(_VIEW + where, params)]

    def add(self, stream: Stream) -> None:
        """Insert; KeyError when the code (or id) was ever used."""
        s = stream
        self._sql.insert_new(
            "INSERT INTO streams (id, account_id, name, code, description, icon_url, created_at)"
            " VALUES (?, ?, ?, ?, ?, ?, ?)",
            (
                s.id,
                s.account_id,
                s.name,
                s.code,
                s.description,
                s.icon_url,
                self._rows.time(s.created_at),
            ),
            s.code,
        )

    def get(self, account_id: str, stream_id: str) -> StreamView | None:
        """The account's live stream, or None."""
        found = self._views(" AND s.id = ? AND s.account_id = ?", stream_id, account_id)
        return found[0] if found else None

    def by_code(self, code: str) -> StreamView | None:
        """The live stream with this code, or None."""
        found = self._views(" AND s.code = ?", code)
        return found[0] if found else None

    def list(self, account_id: str) -> Sequence[StreamView]:
        """The account's live streams, newest first."""
        return self._views(" AND s.account_id = ? ORDER BY s.id DESC", account_id)

    def count(self, account_id: str) -> int:
        """How many live streams the account has."""
        (count,) = self._sql.one(
            "SELECT COUNT(*) FROM streams WHERE account_id = ? AND deleted_at IS NULL",
            (account_id,),
        )
        return int(count)

    def delete(self, account_id: str, stream_id: str, at: datetime) -> bool:
        """Mark deleted (the code stays taken) and remove its subscriptions."""
        cursor = self._sql.run(
            "UPDATE streams SET deleted_at = ? WHERE id = ? AND account_id = ?"
            " AND deleted_at IS NULL",
            (self._rows.time(at), stream_id, account_id),
        )
        if cursor.rowcount == 0:
            return False
        self._sql.run("DELETE FROM subscriptions WHERE stream_id = ?", (stream_id,))
        return True

    def subscriber_devices(self, stream_id: str) -> Sequence[Device]:
        """Active devices of the stream's subscribers."""
        rows = self._sql.all(
            f"SELECT {prefixed(DEVICE_COLUMNS, 'd')} FROM subscriptions AS s"  # noqa: S608
            " JOIN devices AS d ON d.account_id = s.account_id"
            " WHERE s.stream_id = ? AND d.is_active = TRUE",
            (stream_id,),
        )
        return [self._rows.device_from_row(r) for r in rows]


class Subscriptions(Repository):
    def _subscription(self, row: Sequence[Any]) -> Subscription:
        id_, account_id, stream_id, created_at = row[:4]
        return Subscription(id_, account_id, stream_id, self._rows.read_time(created_at))

    def add(self, subscription: Subscription) -> None:
        """Insert; KeyError when the account already subscribes to the stream."""
        s = subscription
        self._sql.insert_new(
            f"INSERT INTO subscriptions ({_SUBSCRIPTION_COLUMNS}) VALUES (?, ?, ?, ?)",  # noqa: S608
            (s.id, s.account_id, s.stream_id, self._rows.time(s.created_at)),
            s.stream_id,
        )

    def _find(self, where: str, *params: object) -> Subscription | None:
        rows = self._sql.select(_SUBSCRIPTION_COLUMNS, "subscriptions", where, *params)
        return self._subscription(rows[0]) if rows else None

    def get(self, account_id: str, subscription_id: str) -> Subscription | None:
        """The account's subscription, or None."""
        return self._find("id = ? AND account_id = ?", subscription_id, account_id)

    def find(self, account_id: str, stream_id: str) -> Subscription | None:
        """The account's subscription to the stream, or None."""
        return self._find("account_id = ? AND stream_id = ?", account_id, stream_id)

    def list(self, account_id: str) -> Sequence[tuple[Subscription, StreamView]]:
        """The account's subscriptions with their streams, newest first."""
        rows = self._sql.all(
            "SELECT sub.id, sub.account_id, sub.stream_id, sub.created_at, v.*"  # noqa: S608
            f" FROM subscriptions AS sub JOIN ({_VIEW}) AS v ON v.id = sub.stream_id"
            " WHERE sub.account_id = ? ORDER BY sub.id DESC",
            (account_id,),
        )
        return [(self._subscription(r), _view(self._rows, r[4:])) for r in rows]

    def delete(self, account_id: str, subscription_id: str) -> bool:
        """Remove the subscription; False when there is none."""
        cursor = self._sql.run(
            "DELETE FROM subscriptions WHERE id = ? AND account_id = ?",
            (subscription_id, account_id),
        )
        return bool(cursor.rowcount > 0)

"""Streams and subscriptions."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from pushcore.domain.model import Device, Stream, StreamView, Subscription
from pushcore.storage.records import DEVICES, STREAMS, SUBSCRIPTIONS
from pushcore.storage.sql.accounts import Repository
from pushcore.storage.sql.dialect import Dialect

# The live subscriber count travels with the stream, after its columns: every
# API view shows it.
_VIEW = (
    f"SELECT {STREAMS.prefixed('s')},"  # noqa: S608 (our column names)
    " (SELECT COUNT(*) FROM subscriptions AS c WHERE c.stream_id = s.id)"
    " FROM streams AS s WHERE s.deleted_at IS NULL"
)
# Where the count is in a row of _VIEW; where the view starts in a subscription's.
_SUBSCRIBERS, _VIEW_AT = len(STREAMS.names), len(SUBSCRIPTIONS.names)


def _view(dialect: Dialect, row: Sequence[Any]) -> StreamView:
    return StreamView(STREAMS.codec(dialect).decode(row[:_SUBSCRIBERS]), row[_SUBSCRIBERS])


class Streams(Repository):
    def _views(self, where: str, *params: object) -> list[StreamView]:
        return [_view(self._dialect, r) for r in self._sql.all(_VIEW + where, params)]

    def add(self, stream: Stream) -> None:
        """Insert; KeyError when the code (or id) was ever used."""
        codec = STREAMS.codec(self._dialect)
        self._sql.insert_new(STREAMS.insert, codec.encode(stream), stream.code)

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
            (self._dialect.time(at), stream_id, account_id),
        )
        if cursor.rowcount == 0:
            return False
        self._sql.run("DELETE FROM subscriptions WHERE stream_id = ?", (stream_id,))
        return True

    def subscriber_devices(self, stream_id: str) -> Sequence[Device]:
        """Active devices of the stream's subscribers."""
        rows = self._sql.all(
            f"SELECT {DEVICES.prefixed('d')} FROM subscriptions AS s"  # noqa: S608
            " JOIN devices AS d ON d.account_id = s.account_id"
            " WHERE s.stream_id = ? AND d.is_active = TRUE",
            (stream_id,),
        )
        decode = DEVICES.codec(self._dialect).decode
        return [decode(r) for r in rows]


class Subscriptions(Repository):
    def add(self, subscription: Subscription) -> None:
        """Insert; KeyError when the account already subscribes to the stream."""
        codec = SUBSCRIPTIONS.codec(self._dialect)
        self._sql.insert_new(
            SUBSCRIPTIONS.insert, codec.encode(subscription), subscription.stream_id
        )

    def _find(self, where: str, *params: object) -> Subscription | None:
        rows = self._sql.select(SUBSCRIPTIONS.columns, "subscriptions", where, *params)
        return SUBSCRIPTIONS.codec(self._dialect).decode(rows[0]) if rows else None

    def get(self, account_id: str, subscription_id: str) -> Subscription | None:
        """The account's subscription, or None."""
        return self._find("id = ? AND account_id = ?", subscription_id, account_id)

    def find(self, account_id: str, stream_id: str) -> Subscription | None:
        """The account's subscription to the stream, or None."""
        return self._find("account_id = ? AND stream_id = ?", account_id, stream_id)

    def list(self, account_id: str) -> Sequence[tuple[Subscription, StreamView]]:
        """The account's subscriptions with their streams, newest first."""
        # The subscription's columns, then the stream view's.
        rows = self._sql.all(
            f"SELECT {SUBSCRIPTIONS.prefixed('sub')}, v.*"  # noqa: S608
            f" FROM subscriptions AS sub JOIN ({_VIEW}) AS v ON v.id = sub.stream_id"
            " WHERE sub.account_id = ? ORDER BY sub.id DESC",
            (account_id,),
        )
        decode = SUBSCRIPTIONS.codec(self._dialect).decode
        return [(decode(r[:_VIEW_AT]), _view(self._dialect, r[_VIEW_AT:])) for r in rows]

    def delete(self, account_id: str, subscription_id: str) -> bool:
        """Remove the subscription; False when there is none."""
        cursor = self._sql.run(
            "DELETE FROM subscriptions WHERE id = ? AND account_id = ?",
            (subscription_id, account_id),
        )
        return bool(cursor.rowcount > 0)

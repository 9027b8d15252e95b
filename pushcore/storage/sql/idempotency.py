"""Idempotency-Key records: claims decided by the primary key, answers kept for replay."""

from __future__ import annotations

from datetime import datetime

from pushcore.domain.idempotency import IdempotencyRecord
from pushcore.storage.records import IDEMPOTENCY_KEYS
from pushcore.storage.sql.accounts import Repository

# What a claim writes: the key and the request, unanswered.
_CLAIMED = IDEMPOTENCY_KEYS.part("account_id", "key", "request_hash", "created_at")
_CLAIM = (
    f"INSERT INTO idempotency_keys ({_CLAIMED.columns})"  # noqa: S608 (our column names)
    f" VALUES ({_CLAIMED.placeholders}) ON CONFLICT (account_id, idempotency_key) DO UPDATE"
    " SET request_hash = excluded.request_hash, created_at = excluded.created_at,"
    " status = NULL, body = NULL, completed_at = NULL"
    " WHERE idempotency_keys.created_at < ? OR (idempotency_keys.completed_at IS NULL"
    " AND idempotency_keys.created_at < ?) RETURNING 1"
)
_THE_CLAIM = "account_id = ? AND idempotency_key = ? AND created_at = ? AND completed_at IS NULL"


class IdempotencyKeys(Repository):
    def claim(
        self, record: IdempotencyRecord, stale_before: datetime, abandoned_before: datetime
    ) -> IdempotencyRecord | None:
        """See :class:`pushcore.ports.IdempotencyRepository`."""
        dialect = self._dialect
        params = (
            *_CLAIMED.codec(dialect).encode(record),
            dialect.time_ceil(stale_before),
            dialect.time_ceil(abandoned_before),
        )
        while True:
            # One statement: PostgreSQL makes a concurrent INSERT of the same key
            # wait for this one's commit and then take the conflict path, so of two
            # processes exactly one gets a row back; SQLite's writers take turns.
            if self._sql.all(_CLAIM, params):
                return None
            # A statement of its own sees the holder's committed row. The holder
            # may have released it in between (PostgreSQL): then claim again.
            held = self.get(record.account_id, record.key)
            if held is not None:
                return held

    def get(self, account_id: str, key: str) -> IdempotencyRecord | None:
        """See :class:`pushcore.ports.IdempotencyRepository`."""
        where = "account_id = ? AND idempotency_key = ?"
        found = self._sql.select(
            IDEMPOTENCY_KEYS.columns, "idempotency_keys", where, account_id, key
        )
        return IDEMPOTENCY_KEYS.codec(self._dialect).decode(found[0]) if found else None

    def complete(
        self,
        account_id: str,
        key: str,
        claimed_at: datetime,
        status: int,
        body: bytes,
        at: datetime,
    ) -> bool:
        """See :class:`pushcore.ports.IdempotencyRepository`."""
        cursor = self._sql.run(
            "UPDATE idempotency_keys SET status = ?, body = ?, completed_at = ?"  # noqa: S608
            f" WHERE {_THE_CLAIM}",
            (
                status,
                body.decode("utf-8"),
                self._dialect.time(at),
                account_id,
                key,
                self._dialect.time(claimed_at),
            ),
        )
        return bool(cursor.rowcount > 0)

    def release(self, account_id: str, key: str, claimed_at: datetime) -> bool:
        """See :class:`pushcore.ports.IdempotencyRepository`."""
        cursor = self._sql.run(
            f"DELETE FROM idempotency_keys WHERE {_THE_CLAIM}",  # noqa: S608
            (account_id, key, self._dialect.time(claimed_at)),
        )
        return bool(cursor.rowcount > 0)

    def delete_older_than(self, at: datetime, limit: int) -> int:
        """See :class:`pushcore.ports.IdempotencyRepository`."""
        cursor = self._sql.run(
            "DELETE FROM idempotency_keys WHERE (account_id, idempotency_key) IN"
            " (SELECT account_id, idempotency_key FROM idempotency_keys WHERE created_at < ?"
            " ORDER BY created_at LIMIT ?)",
            (self._dialect.time_ceil(at), limit),
        )
        return int(cursor.rowcount)

"""Idempotency-Key records: claims decided by the primary key, answers kept for replay."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from pushcore.domain.idempotency import IdempotencyRecord
from pushcore.storage.sql.accounts import Repository

_COLUMNS = "account_id, idempotency_key, request_hash, status, body, created_at, completed_at"
_CLAIM = (
    "INSERT INTO idempotency_keys (account_id, idempotency_key, request_hash, created_at)"
    " VALUES (?, ?, ?, ?) ON CONFLICT (account_id, idempotency_key) DO UPDATE"
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
        rows = self._rows
        params = (
            record.account_id,
            record.key,
            record.request_hash,
            rows.time(record.created_at),
            rows.time_ceil(stale_before),
            rows.time_ceil(abandoned_before),
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
        found = self._sql.select(_COLUMNS, "idempotency_keys", where, account_id, key)
        return self._record(found[0]) if found else None

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
                self._rows.time(at),
                account_id,
                key,
                self._rows.time(claimed_at),
            ),
        )
        return bool(cursor.rowcount > 0)

    def release(self, account_id: str, key: str, claimed_at: datetime) -> bool:
        """See :class:`pushcore.ports.IdempotencyRepository`."""
        cursor = self._sql.run(
            f"DELETE FROM idempotency_keys WHERE {_THE_CLAIM}",  # noqa: S608
            (account_id, key, self._rows.time(claimed_at)),
        )
        return bool(cursor.rowcount > 0)

    def delete_older_than(self, at: datetime, limit: int) -> int:
        """See :class:`pushcore.ports.IdempotencyRepository`."""
        cursor = self._sql.run(
            "DELETE FROM idempotency_keys WHERE (account_id, idempotency_key) IN"
            " (SELECT account_id, idempotency_key FROM idempotency_keys WHERE created_at < ?"
            " ORDER BY created_at LIMIT ?)",
            (self._rows.time_ceil(at), limit),
        )
        return int(cursor.rowcount)

    def _record(self, row: Sequence[Any]) -> IdempotencyRecord:
        account_id, key, request_hash, status, body, created_at, completed_at = tuple(row)
        return IdempotencyRecord(
            account_id=account_id,
            key=key,
            request_hash=request_hash,
            created_at=self._rows.read_time(created_at),
            status=status,
            body=None if body is None else body.encode("utf-8"),
            completed_at=self._rows.opt_read_time(completed_at),
        )

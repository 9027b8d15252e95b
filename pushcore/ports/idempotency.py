"""The store port of Idempotency-Key records (see :mod:`pushcore.domain.idempotency`)."""

from __future__ import annotations

from datetime import datetime
from typing import Protocol

from pushcore.domain.idempotency import IdempotencyRecord


class IdempotencyRepository(Protocol):
    """Claims of idempotency keys, one per account and key, and the answers kept.

    The claim is decided by the database's uniqueness of (account, key), so
    processes sharing a database agree on which request holds a key. Each
    method raises only the database's own errors.
    """

    def claim(
        self, record: IdempotencyRecord, stale_before: datetime, abandoned_before: datetime
    ) -> IdempotencyRecord | None:
        """Store ``record`` (unanswered) as the holder of its key; None when it now is.

        A record of the key created before ``stale_before``, or unanswered and
        created before ``abandoned_before``, is replaced. Otherwise the key is
        held and its record is returned (answered or not) and nothing changes.
        """
        ...

    def complete(
        self,
        account_id: str,
        key: str,
        claimed_at: datetime,
        status: int,
        body: bytes,
        at: datetime,
    ) -> bool:
        """Store the answer (``status``, UTF-8 ``body``, answered ``at``) of the claim made at
        ``claimed_at``; False when that claim is no longer there (replaced or deleted)."""
        ...

    def release(self, account_id: str, key: str, claimed_at: datetime) -> bool:
        """Delete the unanswered claim made at ``claimed_at``, so the key may be used again;
        False when it is not there (answered, replaced or deleted)."""
        ...

    def get(self, account_id: str, key: str) -> IdempotencyRecord | None:
        """The record of the key, or None."""
        ...

    def delete_older_than(self, at: datetime, limit: int) -> int:
        """Delete up to ``limit`` records created before ``at``, oldest first; how many."""
        ...

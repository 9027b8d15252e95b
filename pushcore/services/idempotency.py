"""Idempotency keys: claim a key for a request, keep its answer, replay it."""

from __future__ import annotations

from datetime import datetime

import attrs

from pushcore.domain.errors import IdempotencyKeyInUse, IdempotencyKeyReused
from pushcore.domain.idempotency import (
    ABANDONED_AFTER,
    REPLAY_WINDOW,
    IdempotencyRecord,
    check_key,
)
from pushcore.ports import Clock, Store


@attrs.frozen
class Claim:
    """A key held by the request being handled, until it is completed or released."""

    account_id: str
    key: str
    claimed_at: datetime  # what the store knows the claim by


@attrs.frozen
class Replay:
    """The kept first answer to a request with this key and the same content."""

    status: int
    body: bytes


@attrs.define(slots=False, eq=False, repr=False)
class IdempotencyService:
    """One request per account and key acts; the others get its answer or an error."""

    _store: Store
    _clock: Clock

    def claim(self, account_id: str, key: str, request_hash: str) -> Claim | Replay:
        """The key for this request, or the answer kept for it.

        ValidationError for a malformed key; IdempotencyKeyReused (422) when the
        key was used for a different request in the last 24 hours;
        IdempotencyKeyInUse (409) while the request that holds it is running.
        """
        check_key(key)
        now = self._clock.now()
        record = IdempotencyRecord(account_id, key, request_hash, now)
        with self._store.transaction() as tx:
            held = tx.idempotency_keys.claim(record, now - REPLAY_WINDOW, now - ABANDONED_AFTER)
        if held is None:
            return Claim(account_id, key, now)
        # A different request first: the client reuses keys, which no retry can fix.
        if held.request_hash != request_hash:
            raise IdempotencyKeyReused(
                "This Idempotency-Key was already used with a different request"
            )
        if held.status is None or held.body is None:
            raise IdempotencyKeyInUse(
                "A request with this Idempotency-Key is still being handled; retry later"
            )
        return Replay(held.status, held.body)

    def complete(self, claim: Claim, status: int, body: bytes) -> None:
        """Keep the answer of the claimed request for replay."""
        with self._store.transaction() as tx:
            tx.idempotency_keys.complete(
                claim.account_id, claim.key, claim.claimed_at, status, body, self._clock.now()
            )

    def release(self, claim: Claim) -> None:
        """Give the key up unanswered (the request failed or was cut short): a retry acts."""
        with self._store.transaction() as tx:
            tx.idempotency_keys.release(claim.account_id, claim.key, claim.claimed_at)

"""Idempotency keys: which keys are valid, how long an answer is kept, what a request is.

A client sends ``Idempotency-Key`` with a POST so that sending it again (a
retry after a timeout or a 503) cannot act twice: the first answer is kept
for :data:`REPLAY_WINDOW` per account and key and given again to a request
with the same key and the same method, path and body.
"""

from __future__ import annotations

import hashlib
import re
from datetime import datetime, timedelta

import attrs

from pushcore.domain.errors import FieldError, ValidationError

HEADER = "Idempotency-Key"
KEY_MAX = 255
REPLAY_WINDOW = timedelta(hours=24)
"""How long a first answer is replayed; after it the key may be used afresh."""
ABANDONED_AFTER = timedelta(minutes=10)
"""A claim still unanswered this long belongs to a process that died mid-request (one
that lives releases its claim however the request ends): the key may be claimed again.
Far above any request's own deadline, so a slow request is never run twice."""

_VISIBLE_ASCII = re.compile(rf"[\x21-\x7e]{{1,{KEY_MAX}}}")


def check_key(key: str) -> None:
    """ValidationError naming the header unless ``key`` is 1 to 255 visible ASCII characters."""
    if _VISIBLE_ASCII.fullmatch(key) is None:
        message = f"must be 1 to {KEY_MAX} visible ASCII characters (no spaces)"
        raise ValidationError([FieldError(HEADER, message)])


def request_hash(method: str, path: str, body: bytes) -> str:
    """What identifies a request under one key: its method, path and body bytes."""
    digest = hashlib.sha256()
    for part in (method.upper().encode(), path.encode("utf-8", "surrogateescape"), body):
        # Length-prefixed, so that no two different requests run together alike.
        digest.update(len(part).to_bytes(8, "big"))
        digest.update(part)
    return digest.hexdigest()


@attrs.frozen
class IdempotencyRecord:
    """A key's claim by a request, and once the request is answered, that answer."""

    account_id: str
    key: str
    request_hash: str
    created_at: datetime
    status: int | None = None
    body: bytes | None = None
    completed_at: datetime | None = None

    @property
    def answered(self) -> bool:
        """Whether the request that claimed the key has been answered."""
        return self.completed_at is not None

"""Expiry: a delivery not made by a notification's `expiresAt` is not made (API.md,
"After sending"); each gateway is told what is left of it at each attempt."""

from __future__ import annotations

import math
from datetime import datetime, timedelta

from pushcore.domain.errors import FieldError

TTL_MIN = 1
TTL_MAX = 2_419_200  # 28 days: FCM's and APNs' longest storage, and Web Push's common one
# The failure reason of a delivery not made in time, and of a notification none made.
EXPIRED = "expired"
# Web Push without an expiry keeps the TTL it always had.
WEB_PUSH_DEFAULT_TTL = 86_400


def expires_at_of(due: datetime, ttl: int | None, expires_at: datetime | None) -> datetime | None:
    """When a notification due at ``due`` expires: ``ttl`` seconds after it, or the
    ``expires_at`` given (the request's rules have checked it is after ``due``)."""
    if ttl is not None:
        return due + timedelta(seconds=ttl)
    return expires_at


def seconds_left(expires_at: datetime | None, now: datetime) -> int | None:
    """Whole seconds a gateway may still keep a delivery (at least 1), None without an
    expiry; 0 once it has expired (the delivery ends EXPIRED and is not sent)."""
    if expires_at is None:
        return None
    left = (expires_at - now).total_seconds()
    if left <= 0:
        return 0
    # Rounded up: half a second left is one a gateway may use, not "already gone".
    return max(1, math.ceil(left))


def expiry_errors(due: datetime, ttl: int | None, expires_at: datetime | None) -> list[FieldError]:
    """What is wrong with a request's expiry: both ``ttl`` and ``expiresAt``, or an
    ``expiresAt`` not after the due time."""
    if ttl is not None and expires_at is not None:
        return [FieldError("expiresAt", "give ttl or expiresAt, not both")]
    if expires_at is not None and expires_at <= due:
        return [FieldError("expiresAt", "must be after the due time")]
    return []


def has_expired(expires_at: datetime | None, at: datetime) -> bool:
    """Whether a delivery made at ``at`` would be past ``expires_at``."""
    return expires_at is not None and at >= expires_at

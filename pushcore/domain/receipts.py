"""Receipts and what the deliveries list shows of a delivery (API.md, "Following up").

A receipt token names one delivery and proves the server made it: ``rct_``
then base64url(tag + delivery id), the tag the first 16 bytes of
HMAC-SHA256 under a key every process on the database shares. Checking one
needs the key, not a table: a forged or altered token fails the tag before
any row is read.
"""

from __future__ import annotations

import base64
import binascii
import enum
import functools
import hmac
from collections.abc import Mapping

import attrs

from pushcore.domain.states import DeliveryStatus

PREFIX = "rct_"
TAG_BYTES = 16
# A delivery id is 'dlv_' and one or two ULIDs; anything longer is no token of ours.
MAX_TOKEN = 200
_CONTEXT = b"pushcore receipt v1\x00"


class ReceiptEvent(enum.StrEnum):
    """What a receipt reports."""

    DISPLAYED = "displayed"
    OPENED = "opened"


class PublicStatus(enum.StrEnum):
    """A delivery's status as the API shows it."""

    PENDING = "PENDING"
    HELD = "HELD"
    DELIVERED = "DELIVERED"
    FAILED = "FAILED"
    EXPIRED = "EXPIRED"
    CANCELLED = "CANCELLED"
    SUPERSEDED = "SUPERSEDED"
    WITHDRAWN = "WITHDRAWN"


# The one table from stored statuses to shown ones: IN_FLIGHT is the engine's
# lease, and to a sender still pending. A status another feature adds is one
# line here (its stored name, keyed by string so this module needs no import).
PUBLIC_STATUS: Mapping[str, PublicStatus] = {
    DeliveryStatus.PENDING.value: PublicStatus.PENDING,
    DeliveryStatus.IN_FLIGHT.value: PublicStatus.PENDING,
    DeliveryStatus.DELIVERED.value: PublicStatus.DELIVERED,
    DeliveryStatus.FAILED.value: PublicStatus.FAILED,
    DeliveryStatus.CANCELLED.value: PublicStatus.CANCELLED,
    "HELD": PublicStatus.HELD,
    "EXPIRED": PublicStatus.EXPIRED,
    "WITHDRAWN": PublicStatus.WITHDRAWN,
}


# A superseded delivery is stored CANCELLED with this reason (a newer notification with
# its collapse key came first), so counters and retention treat it as any cancel; the
# list shows it as SUPERSEDED.
SUPERSEDED_REASON = "superseded"


def public_status(stored: str, reason: str | None = None) -> PublicStatus:
    """The status the API shows for a stored delivery status (and failure reason)."""
    if stored == DeliveryStatus.CANCELLED.value and reason == SUPERSEDED_REASON:
        return PublicStatus.SUPERSEDED
    return PUBLIC_STATUS[stored]


@attrs.frozen
class StoredFilter:
    """What a ``status=`` filter matches in storage: these stored statuses, and for
    CANCELLED rows whether the reason is ``superseded`` (True), is not (False) or any."""

    statuses: tuple[str, ...]
    superseded: bool | None = None


def stored_statuses(shown: PublicStatus) -> StoredFilter:
    """The stored rows shown as ``shown`` (what a ``status=`` filter matches)."""
    if shown is PublicStatus.SUPERSEDED:
        return StoredFilter((DeliveryStatus.CANCELLED.value,), superseded=True)
    statuses = tuple(sorted(s for s, p in PUBLIC_STATUS.items() if p is shown))
    if shown is PublicStatus.CANCELLED:
        return StoredFilter(statuses, superseded=False)
    return StoredFilter(statuses)


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode("ascii").rstrip("=")


@functools.lru_cache(maxsize=4)
def _keyed(key: bytes) -> hmac.HMAC:
    return hmac.new(key, _CONTEXT, "sha256")


def _tag(key: bytes, delivery_id: bytes) -> bytes:
    # A copy of the keyed state: about half the cost of keying anew, and a token is
    # made for every delivery the engine claims.
    mac = _keyed(key).copy()
    mac.update(delivery_id)
    return mac.digest()[:TAG_BYTES]


def receipt_token(key: bytes, delivery_id: str) -> str:
    """The receipt token of ``delivery_id`` under ``key``."""
    raw = delivery_id.encode("ascii")
    return PREFIX + _b64(_tag(key, raw) + raw)


def token_length(delivery_id: str) -> int:
    """How many characters the token of ``delivery_id`` has (a payload's room for it)."""
    n = TAG_BYTES + len(delivery_id)
    return len(PREFIX) + (4 * n + 2) // 3


def delivery_of(key: bytes, token: str) -> str | None:
    """The delivery a token names, or None when the key did not make it."""
    if not token.startswith(PREFIX) or len(token) > MAX_TOKEN:
        return None
    body = token[len(PREFIX) :]
    try:
        raw = base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))
    except (binascii.Error, ValueError):
        return None
    tag, delivery_id = raw[:TAG_BYTES], raw[TAG_BYTES:]
    # Canonical only: another spelling of the same bytes is not this token.
    if _b64(raw) != body or not hmac.compare_digest(tag, _tag(key, delivery_id)):
        return None
    try:
        return delivery_id.decode("ascii")
    except UnicodeDecodeError:
        return None

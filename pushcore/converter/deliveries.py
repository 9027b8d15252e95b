"""A notification's deliveries as API JSON, their cursor, and the receipt body."""

from __future__ import annotations

import re
from datetime import datetime

import attrs

from pushcore.converter._views import View, count
from pushcore.converter.paging import Cursor, PageView
from pushcore.domain.errors import FieldError, ValidationError
from pushcore.domain.model import Platform
from pushcore.domain.receipts import PublicStatus, ReceiptEvent, public_status
from pushcore.domain.validation import about
from pushcore.ports.receipts import DeliveryRow

# A delivery id: 'dlv_' then one ULID, or two joined by '_' (a stream send's).
_DELIVERY_ID = re.compile(r"dlv_[0-9A-Z_]{1,80}")
DELIVERY_CURSOR_PATTERN = "^[A-Za-z0-9_-]{6,120}$"
DELIVERY_CURSOR = Cursor(_DELIVERY_ID, DELIVERY_CURSOR_PATTERN)


@attrs.frozen
class DeliveryView(View):
    """One notification on its way to one device (GET /api/notifications/:id/deliveries)."""

    id: str = attrs.field(
        metadata=about(
            "The delivery's id: opaque, prefixed `dlv_`.", example="dlv_01JD3V6Q5X8ZK2M4N7P9R0S1T2"
        )
    )
    platform: Platform | None = attrs.field(metadata=about("Null once the device is removed."))
    device_id: str | None = attrs.field(
        metadata=about("Null for another account's device (a stream send's subscriber).")
    )
    device_name: str | None = attrs.field(
        metadata=about("Null for another account's device, or a device without a name.")
    )
    status: PublicStatus = attrs.field(
        metadata=about(
            "PENDING (waiting or being sent), HELD (quiet hours), DELIVERED, FAILED, "
            "EXPIRED, CANCELLED, SUPERSEDED (a replacement took its place), WITHDRAWN."
        )
    )
    revision: int = attrs.field(metadata=about("The notification's revision it carries."))
    due_at: datetime = attrs.field(metadata=about("When it is (or was) due."))
    held_until: datetime | None = attrs.field(metadata=about("The end of a HELD delivery's wait."))
    attempts: int = attrs.field(metadata=count("Times it was handed to a gateway."))
    last_attempt_at: datetime | None = attrs.field(metadata=about("When a gateway last answered."))
    delivered_at: datetime | None = attrs.field(metadata=about("When a gateway accepted it."))
    displayed_at: datetime | None = attrs.field(
        metadata=about("The first `displayed` receipt from the device.")
    )
    opened_at: datetime | None = attrs.field(
        metadata=about("The first `opened` receipt, or the inbox entry read by its account.")
    )
    failure_reason: str | None = attrs.field(metadata=about("Why it failed or was cancelled."))

    @classmethod
    def of(cls, row: DeliveryRow, revision: int, shown: bool) -> DeliveryView:
        """The view of ``row``; ``shown``: whether the caller may see which device it is."""
        d = row.delivery
        return cls(
            id=d.id,
            platform=row.platform,
            device_id=d.device_id if shown else None,
            device_name=row.device_name if shown else None,
            status=public_status(d.status, d.failure_reason),
            revision=revision,
            due_at=d.due_at,
            # Quiet hours (another change) add Delivery.held_until; until then, null.
            held_until=getattr(d, "held_until", None),
            attempts=d.attempts,
            last_attempt_at=d.last_attempt_at,
            delivered_at=d.delivered_at,
            displayed_at=d.displayed_at,
            opened_at=d.opened_at,
            failure_reason=d.failure_reason,
        )


@attrs.frozen
class DeliveryPageView(PageView):
    """One page of a notification's deliveries, in id order."""

    cursor = DELIVERY_CURSOR

    items: tuple[DeliveryView, ...]
    next_cursor: str | None = DELIVERY_CURSOR.field()


@attrs.frozen
class ReceiptRequest:
    """A receipt: a delivery's token from its payload, and what happened to it."""

    token: str = attrs.field(
        metadata=about(
            "The payload's `receipt` (`rct_...`).",
            example="rct_3q2-7wAAAQBkbHZfMDFKRDNWNlE1WDhaSzJNNE43UDlSMFMxVDI",
        )
    )
    event: ReceiptEvent = attrs.field(metadata=about("`displayed` or `opened`.", example="opened"))


def parse_delivery_query(status: str | None) -> PublicStatus | None:
    """The ``status=`` filter of the deliveries list, or a 400 naming the allowed ones."""
    if status is None:
        return None
    try:
        return PublicStatus(status.upper())
    except ValueError:
        allowed = ", ".join(s.value for s in PublicStatus)
        raise ValidationError([FieldError("status", f"must be one of: {allowed}")]) from None

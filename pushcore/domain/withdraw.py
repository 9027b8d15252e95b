"""Withdrawal: what was delivered is taken back (API.md, "After sending").

A withdrawn notification's delivered deliveries are queued again, in their own
rows, as withdrawals (``Delivery.kind``): the engine sends each device the
withdrawal instead of the notification, with the same leases and retries, so a
withdrawal accepted by the API survives a crash. Each ends WITHDRAWN.
"""

from __future__ import annotations

from typing import Any

from pushcore.domain.model import Delivery, Notification
from pushcore.domain.states import DeliveryStatus

NOTIFICATION = "notification"
WITHDRAWAL = "withdrawal"


def is_withdrawal(delivery: Delivery) -> bool:
    """Whether the delivery's next send is a withdrawal."""
    return delivery.kind == WITHDRAWAL


def collapse_key_of(n: Notification) -> str | None:
    """The notification's collapse key, where notifications have one."""
    return getattr(n, "collapse_key", None)


def withdrawal_body(n: Notification) -> dict[str, Any]:
    """The withdrawal body of webhook devices and Web Push (signed as a payload is)."""
    return {"event": "withdrawn", "notificationId": n.id, "collapseKey": collapse_key_of(n)}


def settled_as(delivery: Delivery, status: DeliveryStatus) -> DeliveryStatus:
    """The status a settled delivery takes: a withdrawal's answer, good or bad, ends it
    WITHDRAWN (its notification was delivered there once; the reason says the rest)."""
    if is_withdrawal(delivery) and status in (DeliveryStatus.DELIVERED, DeliveryStatus.FAILED):
        return DeliveryStatus.WITHDRAWN
    return status

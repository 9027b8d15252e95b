"""Store port of what the deliveries list shows and the receipts that reach it.

Raises, besides what a docstring says: the database's own errors when it
fails, ValueError for a naive datetime.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Protocol

import attrs

if TYPE_CHECKING:
    from pushcore.domain.model import Delivery, Platform
    from pushcore.domain.receipts import ReceiptEvent, StoredFilter


@attrs.frozen
class DeliveryRow:
    """A delivery with what the list shows of its device (None: the device is gone)."""

    delivery: Delivery
    platform: Platform | None
    device_account_id: str | None
    device_name: str | None


@attrs.frozen
class Receipt:
    """A receipt event recorded for a delivery (its first of that kind)."""

    delivery_id: str
    notification_id: str
    device_id: str
    event: ReceiptEvent
    at: datetime


class DeliveryLogRepository(Protocol):
    """The deliveries of a notification as a list, and their receipts."""

    def page(
        self,
        notification_id: str,
        statuses: StoredFilter | None,
        limit: int,
        after_id: str | None,
    ) -> Sequence[DeliveryRow]:
        """Up to ``limit`` of the notification's deliveries in id order after
        ``after_id``, only those ``statuses`` matches when given."""
        ...

    def record(self, delivery_id: str, event: ReceiptEvent, at: datetime) -> Receipt | None:
        """Note ``event`` at ``at`` unless the delivery has one already; the receipt when
        this was its first, None when it had one. KeyError: no such delivery."""
        ...

    def opened_by(
        self, account_id: str, entry_ids: Sequence[str], at: datetime
    ) -> Sequence[Receipt]:
        """Note ``opened`` at ``at`` on the deliveries to the account's devices of the
        notifications of these inbox entries (those not opened yet); those noted."""
        ...

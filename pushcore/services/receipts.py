"""A notification's deliveries, one by one, and the receipts devices send back."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

import attrs

from pushcore.converter.deliveries import DeliveryView
from pushcore.domain.errors import NotFound
from pushcore.domain.events import EventType
from pushcore.domain.paging import Page, check_limit, cut
from pushcore.domain.receipts import (
    PublicStatus,
    ReceiptEvent,
    delivery_of,
    stored_statuses,
)
from pushcore.events import record_event
from pushcore.ports import Clock, Store, Transaction
from pushcore.ports.receipts import Receipt
from pushcore.receipts import ReceiptKey

UNKNOWN = "No delivery has this receipt token"


def receipt_recorded(tx: Transaction, receipt: Receipt) -> None:
    """Every receipt's first event passes here, inside the transaction that noted it:
    the one place to react to a delivery being displayed or opened (the sender's
    `delivery.opened` event, in the same transaction: none without the receipt)."""
    if receipt.event is not ReceiptEvent.OPENED:
        return
    for n in tx.notifications.by_ids([receipt.notification_id]):
        # A stream send's devices are its subscribers': not the sender's to see.
        device_id = None if n.stream is not None else receipt.device_id
        record_event(
            tx,
            n.account_id,
            EventType.DELIVERY_OPENED,
            receipt.at,
            notification_id=n.id,
            deliveryId=receipt.delivery_id,
            deviceId=device_id,
            status="OPENED",
        )


@attrs.define(slots=False, eq=False, repr=False)
class ReceiptService:
    """The deliveries list (notifications:read) and receipts (no credential)."""

    _store: Store
    _clock: Clock
    _key: ReceiptKey

    def deliveries(
        self,
        account_id: str,
        notification_id: str,
        status: PublicStatus | None = None,
        limit: int = 20,
        after_id: str | None = None,
    ) -> Page[DeliveryView]:
        """A page of the notification's deliveries in id order; NotFound for another
        account's notification. Another account's device (a stream send's subscriber)
        is shown without its id and name."""
        check_limit(limit)
        statuses = None if status is None else stored_statuses(status)
        with self._store.read() as tx:
            found = tx.notifications.get(account_id, notification_id)
            if found is None:
                raise NotFound("Notification not found")
            rows = tx.receipts.page(notification_id, statuses, limit + 1, after_id)
        own_sends = found.stream is None
        page = cut(rows, limit, lambda r: r.delivery.id)
        items = [
            DeliveryView.of(
                row,
                found.revision,
                row.device_account_id == account_id
                # A removed device of a send to one's own devices was one's own.
                or (row.device_account_id is None and own_sends),
            )
            for row in page.items
        ]
        return Page(items, page.next_key)

    def record(self, token: str, event: ReceiptEvent) -> None:
        """Note ``event`` for the token's delivery (the first of each kind wins);
        NotFound for a token this server did not make or whose delivery is gone."""
        delivery_id = delivery_of(self._key.get(), token)
        if delivery_id is None:
            raise NotFound(UNKNOWN)
        with self._store.transaction() as tx:
            try:
                recorded = tx.receipts.record(delivery_id, event, self._clock.now())
            except KeyError:
                raise NotFound(UNKNOWN) from None
            if recorded is not None:
                receipt_recorded(tx, recorded)


def opened_in_inbox(
    tx: Transaction, account_id: str, entry_ids: Sequence[str], at: datetime
) -> None:
    """Entries just read: the account's deliveries of their notifications count as
    opened (inside the transaction that marked them read)."""
    for receipt in tx.receipts.opened_by(account_id, entry_ids, at):
        receipt_recorded(tx, receipt)

"""The deliveries list of a notification, and receipts (displayed, opened) on its rows."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from pushcore.domain.model import Platform
from pushcore.domain.receipts import SUPERSEDED_REASON, ReceiptEvent, StoredFilter
from pushcore.domain.states import DeliveryStatus
from pushcore.ports.receipts import DeliveryRow, Receipt
from pushcore.storage.records import DELIVERIES
from pushcore.storage.sql.accounts import Repository

_COLUMNS = ", ".join(f"d.{name}" for name in DELIVERIES.names)
# Only these two names reach the SQL text of record().
_EVENT_COLUMNS = {ReceiptEvent.DISPLAYED: "displayed_at", ReceiptEvent.OPENED: "opened_at"}


class DeliveryLog(Repository):
    def page(
        self,
        notification_id: str,
        statuses: StoredFilter | None,
        limit: int,
        after_id: str | None,
    ) -> Sequence[DeliveryRow]:
        """Up to ``limit`` deliveries of the notification after ``after_id``, in id order."""
        where, params = "d.notification_id = ?", [notification_id]
        if statuses is not None:
            where += " AND d.status = ANY(?)"
            params.append(self._dialect.array(statuses.statuses))
            if statuses.superseded is not None:
                # Only CANCELLED rows split by their reason; other statuses pass.
                where += (
                    " AND (d.status <> ? OR d.failure_reason = ?)"
                    if statuses.superseded
                    else " AND (d.status <> ? OR d.failure_reason IS NULL OR d.failure_reason <> ?)"
                )
                params += [DeliveryStatus.CANCELLED.value, SUPERSEDED_REASON]
        if after_id is not None:
            where += " AND d.id > ?"
            params.append(after_id)
        # A removed device leaves its deliveries (no foreign key): a LEFT JOIN.
        rows = self._sql.all(
            f"SELECT {_COLUMNS}, v.platform, v.account_id, v.name FROM deliveries AS d"  # noqa: S608
            f" LEFT JOIN devices AS v ON v.id = d.device_id WHERE {where} ORDER BY d.id LIMIT ?",
            (*params, limit),
        )
        decode = DELIVERIES.codec(self._dialect).decode
        width = len(DELIVERIES.names)
        return [
            DeliveryRow(
                decode(row[:width]),
                None if row[width] is None else Platform(row[width]),
                row[width + 1],
                row[width + 2],
            )
            for row in rows
        ]

    def record(self, delivery_id: str, event: ReceiptEvent, at: datetime) -> Receipt | None:
        """The first ``event`` of the delivery, or None when it has one; KeyError if none."""
        column = _EVENT_COLUMNS[event]
        row = self._sql.one(
            f"UPDATE deliveries SET {column} = ? WHERE id = ? AND {column} IS NULL"  # noqa: S608
            " RETURNING notification_id, device_id",
            (self._dialect.time(at), delivery_id),
        )
        if row is not None:
            return Receipt(delivery_id, row[0], row[1], event, at)
        if self._sql.one("SELECT 1 FROM deliveries WHERE id = ?", (delivery_id,)) is None:
            raise KeyError(delivery_id)
        return None

    def opened_by(
        self, account_id: str, entry_ids: Sequence[str], at: datetime
    ) -> Sequence[Receipt]:
        """``opened`` on the account's deliveries of these entries' notifications."""
        if not entry_ids:
            return []
        rows = self._sql.all(
            "UPDATE deliveries SET opened_at = ? WHERE opened_at IS NULL AND notification_id IN"
            " (SELECT notification_id FROM inbox WHERE account_id = ? AND public_id = ANY(?))"
            " AND device_id IN (SELECT id FROM devices WHERE account_id = ?)"
            " RETURNING id, notification_id, device_id",
            (self._dialect.time(at), account_id, self._dialect.array(entry_ids), account_id),
        )
        return [Receipt(r[0], r[1], r[2], ReceiptEvent.OPENED, at) for r in sorted(rows)]

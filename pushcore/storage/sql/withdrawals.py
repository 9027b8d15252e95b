"""Withdrawals: a notification taken back, and its deliveries queued as withdrawals.

The delivered deliveries become the withdrawals' queue in place (kind
``withdrawal``, PENDING, due now): the engine's claims, leases and retries
carry them as they carry any delivery, so one the API accepted is never lost.
A `live` device's delivery was its inbox entry: it is WITHDRAWN at once.
"""

from __future__ import annotations

from datetime import datetime

from pushcore.storage.sql.accounts import Repository

_LIVE = "(SELECT id FROM devices WHERE platform = 'live')"


class Withdrawals(Repository):
    def mark(self, notification_id: str, at: datetime) -> bool:
        """Set the notification's withdrawal time, once; whether this set it."""
        cursor = self._sql.run(
            "UPDATE notifications SET withdrawn_at = ? WHERE id = ? AND withdrawn_at IS NULL",
            (self._dialect.time(at), notification_id),
        )
        return bool(cursor.rowcount > 0)

    def cancel_pending(self, notification_id: str, reason: str) -> int:
        """Cancel every PENDING delivery, retries too: nothing more of it goes out."""
        rows = self._sql.all(
            "UPDATE deliveries SET status = 'CANCELLED', failure_reason = ?"
            " WHERE notification_id = ? AND status = 'PENDING' RETURNING account_id",
            (reason, notification_id),
        )
        self._sql.tally.moved(rows, "PENDING", "CANCELLED")
        return len(rows)

    def queue(self, notification_id: str, due: datetime) -> int:
        """Queue a withdrawal for every device the notification was delivered to; how
        many go through a gateway (a live device's is WITHDRAWN now)."""
        live = self._sql.all(
            "UPDATE deliveries SET status = 'WITHDRAWN', kind = 'withdrawal'"  # noqa: S608
            f" WHERE notification_id = ? AND status = 'DELIVERED' AND device_id IN {_LIVE}"
            " RETURNING account_id",
            (notification_id,),
        )
        self._sql.tally.moved(live, "DELIVERED", "WITHDRAWN")
        queued = self._sql.all(
            "UPDATE deliveries SET status = 'PENDING', kind = 'withdrawal', due_at = ?,"
            " attempts = 0, failure_reason = NULL, settled_at = NULL,"
            " lease_owner = NULL, lease_until = NULL"
            " WHERE notification_id = ? AND status = 'DELIVERED' RETURNING account_id",
            (self._dialect.time(due), notification_id),
        )
        self._sql.tally.moved(queued, "DELIVERED", "PENDING")
        return len(queued)

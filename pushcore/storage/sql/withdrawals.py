"""Withdrawals: a notification taken back, and its deliveries queued as withdrawals.

The delivered deliveries become the withdrawals' queue in place (kind
``withdrawal``, PENDING, due now): the engine's claims, leases and retries
carry them as they carry any delivery, so one the API accepted is never lost.
A `live` device's delivery was its inbox entry: it is WITHDRAWN at once.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from pushcore.storage.sql.accounts import Repository

_LIVE = "(SELECT id FROM devices WHERE platform = 'live')"
_WITHDRAWN = "SELECT id FROM notifications WHERE id = ANY(?) AND withdrawn_at IS NOT NULL"


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
            " WHERE notification_id = ? AND status IN ('PENDING', 'HELD')"
            " RETURNING account_id",
            (reason, notification_id),
        )
        self._sql.tally.moved(rows, "PENDING", "CANCELLED")
        return len(rows)

    def queue(self, notification_id: str, due: datetime) -> int:
        """Queue a withdrawal for every device the notification was delivered to; how
        many go through a gateway (a live device's is WITHDRAWN now)."""
        return self.queue_withdrawn([notification_id], due)

    def queue_withdrawn(self, notification_ids: Sequence[str], due: datetime) -> int:
        """:meth:`queue` for those of these notifications that are withdrawn (their
        deliveries delivered since the withdrawal); how many were queued."""
        if not notification_ids:
            return 0
        # Read first: the engine asks after every roll-up, and next to none of them is
        # withdrawn; two UPDATEs that find nothing cost twice this one read.
        withdrawn = self._sql.all(_WITHDRAWN, (self._dialect.array(sorted(notification_ids)),))
        if not withdrawn:
            return 0
        ids = self._dialect.array(sorted(r[0] for r in withdrawn))
        live = self._sql.all(
            "UPDATE deliveries SET status = 'WITHDRAWN', kind = 'withdrawal'"  # noqa: S608
            f" WHERE notification_id IN ({_WITHDRAWN}) AND status = 'DELIVERED'"
            f" AND device_id IN {_LIVE} RETURNING account_id",
            (ids,),
        )
        self._sql.tally.moved(live, "DELIVERED", "WITHDRAWN")
        queued = self._sql.all(
            "UPDATE deliveries SET status = 'PENDING', kind = 'withdrawal', due_at = ?,"  # noqa: S608
            " attempts = 0, failure_reason = NULL, settled_at = NULL,"
            " lease_owner = NULL, lease_until = NULL"
            f" WHERE notification_id IN ({_WITHDRAWN}) AND status = 'DELIVERED'"
            " RETURNING account_id",
            (self._dialect.time(due), ids),
        )
        self._sql.tally.moved(queued, "DELIVERED", "PENDING")
        return len(queued)

"""What one transaction changed in the accounts' counts, before the store writes it.

Kept apart from :mod:`pushcore.storage.sql.counters` (which writes and reads the
counters through :class:`~pushcore.storage.sql.dialect.Sql`) so that ``Sql`` can
hold a tally without the two modules importing each other.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from datetime import datetime

from pushcore.domain.states import NotificationStatus

# notification_counts' columns: notifications by status, then deliveries by
# status (IN_FLIGHT counts as pending, as the API shows it).
STATUS_COLUMNS = {s.value: s.value.lower() for s in NotificationStatus}
DELIVERY_COLUMNS = {
    "PENDING": "deliveries_pending",
    "IN_FLIGHT": "deliveries_pending",
    "HELD": "deliveries_pending",
    "DELIVERED": "deliveries_delivered",
    "FAILED": "deliveries_failed",
    "CANCELLED": "deliveries_cancelled",
    # Counted with their kin until the stats have columns of their own.
    "EXPIRED": "deliveries_failed",
    "WITHDRAWN": "deliveries_delivered",
}
COUNT_COLUMNS = (*STATUS_COLUMNS.values(), *dict.fromkeys(DELIVERY_COLUMNS.values()))
_INDEX = {column: i for i, column in enumerate(COUNT_COLUMNS)}
ACTIVITY_COLUMNS = ("created", "delivered", "failed")
# The settled statuses the last-24-hours figures count, by their activity column.
_SETTLED_ACTIVITY = {"DELIVERED": 1, "FAILED": 2}


def whole_minute(at: datetime) -> datetime:
    """``at`` rounded down to its minute: the precision of the last-24-hours figures."""
    return at.replace(second=0, microsecond=0)


class Tally:
    """What one transaction changed in the counts, by account and by minute bucket."""

    def __init__(self) -> None:
        self.counts: dict[str, list[int]] = defaultdict(lambda: [0] * len(COUNT_COLUMNS))
        self.activity: dict[tuple[str, datetime], list[int]] = defaultdict(lambda: [0, 0, 0])

    def notification(
        self,
        account_id: str,
        status: str,
        created_at: datetime,
        settled_at: datetime | None,
        n: int = 1,
    ) -> None:
        """``n`` notifications came (-n: went) with this status, creation and settling time."""
        self.counts[account_id][_INDEX[STATUS_COLUMNS[status]]] += n
        self.activity[account_id, whole_minute(created_at)][0] += n
        self.settled(account_id, status, settled_at, n)

    def settled(self, account_id: str, status: str, settled_at: datetime | None, n: int) -> None:
        """A notification (-n: no longer) settled with ``status`` at ``settled_at``."""
        column = _SETTLED_ACTIVITY.get(status)
        if column is not None and settled_at is not None:
            self.activity[account_id, whole_minute(settled_at)][column] += n

    def changed(
        self,
        account_id: str,
        old: tuple[str, datetime | None],
        new: tuple[str, datetime | None],
    ) -> None:
        """A notification's (status, settled_at) went from ``old`` to ``new``."""
        if old[0] != new[0]:
            row = self.counts[account_id]
            row[_INDEX[STATUS_COLUMNS[old[0]]]] -= 1
            row[_INDEX[STATUS_COLUMNS[new[0]]]] += 1
        if old != new:
            self.settled(account_id, *old, -1)
            self.settled(account_id, *new, 1)

    def deliveries(self, account_id: str, status: str, n: int = 1) -> None:
        """``n`` deliveries came (-n: went) with this status."""
        self.counts[account_id][_INDEX[DELIVERY_COLUMNS[status]]] += n

    def moved(self, rows: Iterable[Sequence[str]], old: str, new: str) -> None:
        """Deliveries (rows starting with their account id) went from ``old`` to ``new``."""
        for row in rows:
            self.deliveries(row[0], old, -1)
            self.deliveries(row[0], new, 1)

    def merge(self, other: Tally) -> None:
        """Add what ``other`` (a savepoint's tally, kept) changed to this one."""
        for account_id, deltas in other.counts.items():
            row = self.counts[account_id]
            for i, delta in enumerate(deltas):
                row[i] += delta
        for bucket, deltas in other.activity.items():
            row = self.activity[bucket]
            for i, delta in enumerate(deltas):
                row[i] += delta

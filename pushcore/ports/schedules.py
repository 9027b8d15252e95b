"""The recurring schedules' repositories."""

from __future__ import annotations

from datetime import datetime
from typing import Protocol


class OccurrenceRepository(Protocol):
    """Which occurrence of which schedule has been made into which notification."""

    def claim(
        self, schedule_id: str, occurrence_at: datetime, notification_id: str, at: datetime
    ) -> bool:
        """Record that ``notification_id`` is this occurrence; False if one already is.

        Decided by the database's unique key, whichever process asks: of any
        number of concurrent claims of one occurrence exactly one is True. The
        caller makes the notification in the same transaction, so a claim and
        its notification are kept or lost together.
        """
        ...

    def notification_of(self, schedule_id: str, occurrence_at: datetime) -> str | None:
        """The notification made for this occurrence, if any."""
        ...

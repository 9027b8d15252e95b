"""Recurring schedules: the occurrence key that makes each occurrence one notification."""

from __future__ import annotations

from datetime import datetime

from pushcore.storage.sql.accounts import Repository

# One statement: PostgreSQL makes a concurrent INSERT of the same key wait for the
# first one's commit and then skip it, so of several engines exactly one gets a row.
_CLAIM = (
    "INSERT INTO schedule_occurrences (schedule_id, occurrence_at, notification_id, created_at)"
    " VALUES (?, ?, ?, ?) ON CONFLICT (schedule_id, occurrence_at) DO NOTHING RETURNING 1"
)


class Occurrences(Repository):
    def claim(
        self, schedule_id: str, occurrence_at: datetime, notification_id: str, at: datetime
    ) -> bool:
        """See :class:`pushcore.ports.OccurrenceRepository`."""
        time = self._dialect.time
        params = (schedule_id, time(occurrence_at), notification_id, time(at))
        return bool(self._sql.all(_CLAIM, params))

    def notification_of(self, schedule_id: str, occurrence_at: datetime) -> str | None:
        """See :class:`pushcore.ports.OccurrenceRepository`."""
        where = "schedule_id = ? AND occurrence_at = ?"
        found = self._sql.select(
            "notification_id",
            "schedule_occurrences",
            where,
            schedule_id,
            self._dialect.time(occurrence_at),
        )
        return str(found[0][0]) if found else None

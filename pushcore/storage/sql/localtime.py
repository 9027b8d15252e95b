"""Local-time sends (API.md, "The recipient's time"): deliveries due at a wall-clock time
in each recipient's zone (migration 0027).

The services work out one due time per zone (pushcore/domain/localtime.py) and
hand the zones' table to the database, which gives each delivery the due time
of its device owner's zone in one statement: a stream send to 100,000
subscribers over 40 zones is still one INSERT ... SELECT, and one-time sends
never come here.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime

from pushcore.domain.localtime import DEFAULT_ZONE
from pushcore.domain.model import Notification
from pushcore.storage.sql.accounts import Repository

# A device owner's zone as the dues table names it (NULL: never set, the default).
_ZONE = f"COALESCE(a.time_zone, '{DEFAULT_ZONE}')"
_DUES = (("zone", "text"), ("due", "time"))


class LocalTimes(Repository):
    def _dues(self, dues: Mapping[str, datetime]) -> tuple[str, list[object]]:
        """The dues by zone as a ``WITH dues (zone, due)`` clause and its parameters.

        MATERIALIZED: joined as a plain derived table, SQLite scanned json_each
        again for every delivery (a 100,000-subscriber send over 40 zones took 4 s
        of CPU); made once, it is looked up through an index SQLite builds for it.
        """
        rows = [(zone, self._dialect.time(due)) for zone, due in sorted(dues.items())]
        table = self._dialect.table(_DUES)
        head = f"WITH dues AS MATERIALIZED (SELECT v.zone, v.due FROM {table})"  # noqa: S608
        return head, self._dialect.table_params(rows)

    def stream_zones(self, stream_id: str) -> list[str]:
        """The zones of the stream's subscribers, each once."""
        rows = self._sql.all(
            f"SELECT DISTINCT {_ZONE} FROM subscriptions AS s"  # noqa: S608
            " JOIN accounts AS a ON a.id = s.account_id WHERE s.stream_id = ?",
            (stream_id,),
        )
        return sorted(r[0] for r in rows)

    def unsent_zones(self, notification_id: str) -> list[str]:
        """The zones of the owners of the notification's devices not yet handed anything."""
        rows = self._sql.all(
            f"SELECT DISTINCT {_ZONE} FROM deliveries AS d"  # noqa: S608
            " JOIN devices AS dv ON dv.id = d.device_id JOIN accounts AS a ON a.id = dv.account_id"
            " WHERE d.notification_id = ? AND d.status IN ('PENDING', 'HELD') AND d.attempts = 0",
            (notification_id,),
        )
        return sorted(r[0] for r in rows)

    def fan_out(
        self, notification: Notification, stream_id: str, dues: Mapping[str, datetime]
    ) -> int:
        """One delivery per active subscriber device, due at its owner's zone's time."""
        head, params = self._dues(dues)
        cursor = self._sql.run(
            # The WITH inside the INSERT: Python's sqlite3 counts the rows only of a
            # statement that starts with INSERT. Stored in the order the engine claims
            # them (due time, then id), so that a zone's deliveries lie together on
            # disk: a claim or a record of a zone's 2,500 then writes ~150 pages, not
            # ~2,000 (3x less CPU a row), and a burst's answers are recorded within
            # API.md's 100 ms (docs/benchmarks.md, "Local-time sends"). The picks are
            # made first, the join planned as without the order, then sorted: 100,000
            # accepted in 0.45-0.47 s against 0.29 s unsorted, where the goal is 1 s.
            "INSERT INTO deliveries (id, notification_id, account_id, device_id, status,"  # noqa: S608
            f" due_at, attempts) {head}, picked AS MATERIALIZED (SELECT d.id AS device,"
            " v.due AS due FROM subscriptions AS s JOIN devices AS d ON d.account_id = s.account_id"
            f" JOIN accounts AS a ON a.id = s.account_id JOIN dues AS v ON v.zone = {_ZONE}"
            " WHERE s.stream_id = ? AND d.is_active = TRUE)"
            " SELECT 'dlv_' || substr(?, 5) || '_' || substr(p.device, 5), ?, ?, p.device,"
            " 'PENDING', p.due, 0 FROM picked AS p ORDER BY p.due, p.device",
            (*params, stream_id, notification.id, notification.id, notification.account_id),
        )
        added = int(cursor.rowcount)
        self._sql.tally.deliveries(notification.account_id, "PENDING", added)
        return added

    def reschedule_unsent(self, notification_id: str, dues: Mapping[str, datetime]) -> None:
        """Move each of the notification's deliveries never handed to a gateway to its
        device owner's zone's due time (PENDING again: a held one is screened anew)."""
        head, params = self._dues(dues)
        self._sql.run(
            f"{head} UPDATE deliveries SET due_at = (SELECT v.due FROM dues AS v"  # noqa: S608
            f" JOIN devices AS dv ON dv.id = deliveries.device_id"
            f" JOIN accounts AS a ON a.id = dv.account_id WHERE v.zone = {_ZONE}),"
            " status = 'PENDING', held_until = NULL"
            " WHERE notification_id = ? AND status IN ('PENDING', 'HELD') AND attempts = 0",
            (*params, notification_id),
        )

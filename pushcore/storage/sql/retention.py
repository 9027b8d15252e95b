"""Retention: settled notifications deleted with their deliveries and inbox entries,
old minute buckets pruned."""

from __future__ import annotations

from datetime import datetime

from pushcore.storage.sql.accounts import Repository

_SETTLED = "status IN ('DELIVERED', 'FAILED', 'CANCELLED')"


class Retention(Repository):
    def delete_settled(self, before: datetime, limit: int) -> int:
        """Delete up to ``limit`` deliveries and inbox entries of notifications settled
        before ``before``, then the notifications that have none left; the rows deleted."""
        # Oldest first by the partial index on settled_at. A settled
        # notification with an open delivery (none should exist) is left
        # alone. SKIP LOCKED: a second engine's retention takes other rows.
        candidates = self._sql.all(
            "SELECT id FROM notifications INDEXED BY notifications_settled"  # noqa: S608
            f" WHERE settled_at < ? AND {_SETTLED} AND NOT EXISTS (SELECT 1 FROM deliveries"
            " WHERE notification_id = notifications.id"
            " AND status IN ('PENDING', 'IN_FLIGHT', 'HELD'))"
            " ORDER BY settled_at, id LIMIT ?" + self._sql.lock("FOR UPDATE SKIP LOCKED"),
            (self._dialect.time(before), limit),
        )
        if not candidates:
            return 0
        ids = self._dialect.array([row[0] for row in candidates])
        # Deliveries first, at most `limit` of them: a fan-out to 100,000
        # devices goes over several short transactions, its notification last.
        deliveries = self._sql.all(
            "DELETE FROM deliveries WHERE id IN (SELECT id FROM deliveries"
            " WHERE notification_id = ANY(?) LIMIT ?) RETURNING account_id, status",
            (ids, limit),
        )
        for account_id, status in deliveries:
            self._sql.tally.deliveries(account_id, status, -1)
        # Inbox entries go with their notification, as many slices as a fan-out's.
        entries = self._sql.run(
            "DELETE FROM inbox WHERE seq IN (SELECT seq FROM inbox"
            " WHERE notification_id = ANY(?) LIMIT ?)",
            (ids, limit),
        ).rowcount
        notifications = self._sql.all(
            "DELETE FROM notifications WHERE id = ANY(?) AND NOT EXISTS (SELECT 1"
            " FROM deliveries WHERE notification_id = notifications.id) AND NOT EXISTS"
            " (SELECT 1 FROM inbox WHERE notification_id = notifications.id)"
            " RETURNING account_id, status, created_at, settled_at",
            (ids,),
        )
        read = self._dialect.read_time
        for account_id, status, created_at, settled_at in notifications:
            self._sql.tally.notification(account_id, status, read(created_at), read(settled_at), -1)
        return len(deliveries) + int(entries) + len(notifications)

    def prune_activity(self, before: datetime, limit: int) -> int:
        """Delete up to ``limit`` minute buckets of the stats older than ``before``; how many."""
        cursor = self._sql.run(
            "DELETE FROM notification_activity WHERE (account_id, minute) IN"
            " (SELECT account_id, minute FROM notification_activity WHERE minute < ? LIMIT ?)",
            (self._dialect.time(before), limit),
        )
        return int(cursor.rowcount)

"""An account's notification counts, kept as they change (the stats read them).

Every write path of the repositories reports what it changed to the
transaction's :class:`Tally`; the store flushes it just before COMMIT, in one
or two aggregated upserts, so ``GET /api/notifications/stats`` reads one row
and at most 1,441 minute buckets, however long the account's history.

Why at commit, not statement by statement: on PostgreSQL the counter row of
an account is a lock every writer of that account takes. Taken last, just
before COMMIT (accounts in id order, then buckets in key order), it is held
for the shortest time and never before a notification or delivery lock, so it
cannot close a deadlock cycle; and an engine batch costs one counter UPDATE,
not one per delivery. The tally only ever records what a statement reported
it did (rowcounts, RETURNING rows), so a statement that failed adds nothing.

The last-24-hours figures are counted in whole minutes: ``since`` is rounded
down to its minute, so the window holds 24 hours plus at most a minute.
"""

from __future__ import annotations

import functools
from collections import defaultdict
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import TYPE_CHECKING

from pushcore.domain.model import DeliveryCounts, NotificationStats
from pushcore.domain.states import NotificationStatus

if TYPE_CHECKING:
    from pushcore.storage.sql.dialect import Dialect, Sql

# notification_counts' columns: notifications by status, then deliveries by
# status (IN_FLIGHT counts as pending, as the API shows it).
STATUS_COLUMNS = {s.value: s.value.lower() for s in NotificationStatus}
DELIVERY_COLUMNS = {
    "PENDING": "deliveries_pending",
    "IN_FLIGHT": "deliveries_pending",
    "DELIVERED": "deliveries_delivered",
    "FAILED": "deliveries_failed",
    "CANCELLED": "deliveries_cancelled",
}
COUNT_COLUMNS = (*STATUS_COLUMNS.values(), *dict.fromkeys(DELIVERY_COLUMNS.values()))
_INDEX = {column: i for i, column in enumerate(COUNT_COLUMNS)}
ACTIVITY_COLUMNS = ("created", "delivered", "failed")
_ACTIVITY, _ACCOUNT, _BUCKET = "notification_activity", ("account_id",), ("account_id", "minute")
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

    def moved(self, rows: Iterable[tuple[str, ...]], old: str, new: str) -> None:
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

    def flush(self, sql: Sql) -> None:
        """Apply the changes, accounts in id order and buckets in key order, then forget them."""
        counts = sorted((a, *d) for a, d in self.counts.items() if any(d))
        activity = sorted(
            (a, sql.dialect.time(m), *d) for (a, m), d in self.activity.items() if any(d)
        )
        self.counts.clear()
        self.activity.clear()
        if counts:
            _apply(sql, _upsert_sql, "notification_counts", _ACCOUNT, COUNT_COLUMNS, counts)
        # A bucket only ever loses what it gained; one that is gone was out of
        # every window already (pruned), so a decrement must not bring it back.
        grows = [row for row in activity if any(d > 0 for d in row[2:])]
        shrinks = [row for row in activity if all(d <= 0 for d in row[2:])]
        if grows:
            _apply(sql, _upsert_sql, _ACTIVITY, _BUCKET, ACTIVITY_COLUMNS, grows)
        if shrinks:
            _apply(sql, _subtract_sql, _ACTIVITY, _BUCKET, ACTIVITY_COLUMNS, shrinks)


def _types(keys: tuple[str, ...], columns: tuple[str, ...]) -> list[tuple[str, str]]:
    kinds = {"account_id": "text", "minute": "time"}
    return [(k, kinds[k]) for k in keys] + [(c, "int") for c in columns]


@functools.cache
def _upsert_sql(
    dialect: Dialect, table: str, keys: tuple[str, ...], columns: tuple[str, ...]
) -> str:
    # Built once per table: the flush runs in every write transaction.
    names = ", ".join(keys + columns)
    adds = ", ".join(f"{c} = {table}.{c} + excluded.{c}" for c in columns)
    conflict = f" ON CONFLICT ({', '.join(keys)}) DO UPDATE SET {adds}"
    if dialect.executemany_is_bulk:
        values = ", ".join("?" for _ in keys + columns)
        return f"INSERT INTO {table} ({names}) VALUES ({values}){conflict}"  # noqa: S608
    # WHERE TRUE: SQLite's grammar needs it before ON CONFLICT after a SELECT.
    return (
        f"INSERT INTO {table} ({names}) SELECT {names}"  # noqa: S608 (our names only)
        f" FROM {dialect.table(_types(keys, columns))} WHERE TRUE ORDER BY {', '.join(keys)}"
        f"{conflict}"
    )


@functools.cache
def _subtract_sql(
    dialect: Dialect, table: str, keys: tuple[str, ...], columns: tuple[str, ...]
) -> str:
    if dialect.executemany_is_bulk:
        adds = ", ".join(f"{c} = {c} + ?" for c in columns)
        match = " AND ".join(f"{k} = ?" for k in keys)
        return f"UPDATE {table} SET {adds} WHERE {match}"  # noqa: S608
    sets = ", ".join(f"{c} = {table}.{c} + v.{c}" for c in columns)
    on = " AND ".join(f"{table}.{k} = v.{k}" for k in keys)
    return (
        f"UPDATE {table} SET {sets} FROM {dialect.table(_types(keys, columns))}"  # noqa: S608
        f" WHERE {on}"
    )


def _apply(
    sql: Sql,
    statement: Callable[[Dialect, str, tuple[str, ...], tuple[str, ...]], str],
    table: str,
    keys: tuple[str, ...],
    columns: tuple[str, ...],
    rows: list[tuple[object, ...]],
) -> None:
    dialect = sql.dialect
    text = statement(dialect, table, keys, columns)
    if not dialect.executemany_is_bulk:
        sql.run(text, dialect.table_params(rows))
    elif statement is _subtract_sql:
        # UPDATE ... SET (the deltas) WHERE (the keys): the values in that order.
        n = len(keys)
        sql.many(text, [(*row[n:], *row[:n]) for row in rows])
    else:
        sql.many(text, rows)


def read_stats(sql: Sql, account_id: str, since: datetime) -> NotificationStats:
    """The account's stats from its counters and the minute buckets from ``since``'s minute."""
    # An aggregate without GROUP BY is always one row: an account without
    # counters yet (nothing ever written) still gets its zeros.
    row = sql.one(
        f"SELECT {', '.join('c.' + c for c in COUNT_COLUMNS)}, a.created, a.delivered,"  # noqa: S608
        " a.failed FROM (SELECT COALESCE(SUM(created), 0) AS created,"
        " COALESCE(SUM(delivered), 0) AS delivered, COALESCE(SUM(failed), 0) AS failed"
        " FROM notification_activity WHERE account_id = :a AND minute >= :since) AS a"
        " LEFT JOIN notification_counts AS c ON c.account_id = :a",
        {"a": account_id, "since": sql.dialect.time(whole_minute(since))},
    )
    counts = [int(v or 0) for v in row]
    by_status = dict(zip(STATUS_COLUMNS, counts, strict=False))
    pending, delivered, failed, cancelled = counts[5:9]
    deliveries = DeliveryCounts(pending, delivered, failed, cancelled)
    return NotificationStats(by_status, deliveries, *counts[9:12])

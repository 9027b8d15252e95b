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
from collections.abc import Callable
from datetime import datetime

from pushcore.domain.model import DeliveryCounts, NotificationStats
from pushcore.storage.sql.dialect import Dialect, Sql
from pushcore.storage.sql.tally import (
    ACTIVITY_COLUMNS,
    COUNT_COLUMNS,
    STATUS_COLUMNS,
    Tally,
    whole_minute,
)

_ACTIVITY, _ACCOUNT, _BUCKET = "notification_activity", ("account_id",), ("account_id", "minute")


def flush(tally: Tally, sql: Sql) -> None:
    """Write ``tally``'s changes (accounts in id order, buckets in key order); forget them."""
    counts = sorted((a, *d) for a, d in tally.counts.items() if any(d))
    activity = sorted(
        (a, sql.dialect.time(m), *d) for (a, m), d in tally.activity.items() if any(d)
    )
    tally.counts.clear()
    tally.activity.clear()
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

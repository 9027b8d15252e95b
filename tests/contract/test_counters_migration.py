"""Migration 0005 counts the rows already there: a database with history and no counters
gets counters and minute buckets equal to a recount, on both databases.

The history is written by today's repositories, whose rows have every column
today's entities declare (storage/records.py), so the database has every
migration but 0005, which the store then applies: columns added after 0005
need no change here.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pushcore.domain.states import DeliveryStatus, NotificationStatus
from pushcore.ports import Store
from pushcore.storage.migrate import Migration, apply_if_missing, load_migrations
from pushcore.storage.sql.dialect import Sql
from pushcore.storage.sql.transaction import Transaction
from pushcore.storage.sqlite import SqliteStore
from pushcore.storage.sqlite.dialect import SQLITE
from tests.contract.test_counters_contract import recount
from tests.contract.test_queue_contract import in_flight, make_delivery, make_notification

if TYPE_CHECKING:
    from tests.pg import Cluster

N = NotificationStatus
D = DeliveryStatus
COUNTERS = 5


def without_counters(kind: str) -> list[Migration]:
    """Every migration of ``kind`` but the counters' one."""
    return [m for m in load_migrations(kind) if m.version != COUNTERS]


@contextmanager
def _sqlite_uncounted(path: Path) -> Iterator[Transaction]:
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        for migration in without_counters("sqlite"):
            conn.execute("BEGIN")
            apply_if_missing(Sql(conn, SQLITE, writing=True), migration)
            conn.execute("COMMIT")
        conn.execute("BEGIN")
        # As before the counters: no tally is flushed (no finish()).
        yield Transaction(conn, SQLITE, writing=True)
        conn.execute("COMMIT")
    finally:
        conn.close()


@pytest.fixture
def old_database(
    store_kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> tuple[Callable[[], AbstractContextManager[Transaction]], Callable[[], Store]]:
    """Writing into a database without counters, and opening it as a store (which migrates)."""
    if store_kind == "sqlite":
        path = tmp_path / "old.db"
        return (lambda: _sqlite_uncounted(path)), (lambda: SqliteStore(path))
    import psycopg

    from pushcore.storage.postgres import PostgresStore
    from pushcore.storage.postgres.dialect import POSTGRES
    from pushcore.storage.postgres.store import migrate

    cluster: Cluster = request.getfixturevalue("pg_cluster")
    url = cluster.create_database(template="template0")

    @contextmanager
    def pg_uncounted() -> Iterator[Transaction]:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("SET TIME ZONE 'UTC'")
            migrate(conn, without_counters("postgres"))
            with conn.transaction():
                yield Transaction(conn, POSTGRES, writing=True)

    return pg_uncounted, lambda: PostgresStore(url)


def test_migration_backfills_counters_and_the_last_day(old_database: Any) -> None:
    write_old, open_store = old_database
    now = datetime.now(UTC).replace(microsecond=0)
    hour = timedelta(hours=1)
    with write_old() as tx:
        for i, (account, status, age) in enumerate(
            [
                ("acc_a", N.DELIVERED, hour),
                ("acc_a", N.FAILED, 2 * hour),
                ("acc_a", N.DELIVERED, 48 * hour),
                ("acc_a", N.QUEUED, 0 * hour),
                ("acc_a", N.CANCELLED, 30 * hour),
                ("acc_b", N.SCHEDULED, 3 * hour),
                ("acc_b", N.FAILED, 23 * hour),
            ]
        ):
            settled = None if status in (N.QUEUED, N.SCHEDULED) else now - age + hour / 2
            tx.notifications.add(
                make_notification(
                    f"ntf_{i:02d}", account, status=status, created_at=now - age, settled_at=settled
                )
            )
        tx.schedule.add_many(
            [
                make_delivery("dlv_01", "ntf_00", "dev_01", status=D.DELIVERED, attempts=1),
                make_delivery("dlv_02", "ntf_01", "dev_01", status=D.FAILED, attempts=1),
                make_delivery("dlv_03", "ntf_03", "dev_01"),
                in_flight(make_delivery("dlv_04", "ntf_03", "dev_02"), "engine", now + hour),
                make_delivery("dlv_05", "ntf_04", "dev_01", status=D.CANCELLED),
                make_delivery("dlv_06", "ntf_05", "dev_09", "acc_b"),
            ]
        )
    store = open_store()
    try:
        with store.read() as tx:
            for account in ("acc_a", "acc_b"):
                stats = tx.notifications.stats(account, now - 24 * hour)
                assert stats == recount(tx, account, now - 24 * hour)
            stats = tx.notifications.stats("acc_a", now - 24 * hour)
    finally:
        store.close()
    assert stats.total == 5
    assert stats.deliveries.pending == 2
    # Created in the day: ntf_00, 01, 03; delivered and failed in it: ntf_00, ntf_01.
    assert (stats.created_24h, stats.delivered_24h, stats.failed_24h) == (3, 1, 1)

"""SQLite reuses the pages retention frees: under a steady load the file stays flat."""

from __future__ import annotations

import itertools
import sqlite3
from datetime import timedelta
from pathlib import Path

from pushcore.domain.states import DeliveryStatus, NotificationStatus
from pushcore.storage.sqlite import SqliteStore
from tests.contract.test_queue_contract import make_delivery, make_notification
from tests.contract.test_store_contract import T0

HOUR = timedelta(hours=1)


def test_steady_create_and_retention_keeps_the_file_size_flat(tmp_path: Path) -> None:
    path = tmp_path / "pushcore.db"
    store = SqliteStore(path)
    ids = itertools.count()
    pages: list[int] = []
    try:
        for hour in range(24):
            at = T0 + hour * HOUR
            with store.transaction() as tx:
                for _ in range(200):
                    n = next(ids)
                    tx.notifications.add(
                        make_notification(
                            f"ntf_{n:08d}",
                            status=NotificationStatus.DELIVERED,
                            created_at=at,
                            settled_at=at,
                            metadata={"k": "x" * 200},
                        )
                    )
                    delivery = make_delivery(
                        f"dlv_{n:08d}",
                        f"ntf_{n:08d}",
                        status=DeliveryStatus.DELIVERED,
                        settled_at=at,
                    )
                    tx.schedule.add_many([delivery])
            # Two hours kept: each hour deletes as much as it adds, in batches.
            while True:
                with store.transaction() as tx:
                    if not tx.retention.delete_settled(at - 2 * HOUR, 100):
                        break
            with sqlite3.connect(path) as conn:
                pages.append(conn.execute("PRAGMA page_count").fetchone()[0])
    finally:
        store.close()
    # Full after three hours; from then on only B-tree slack (a few pages), where
    # keeping everything would grow by a third of the file every hour.
    assert pages[-1] <= pages[4] * 1.05, pages

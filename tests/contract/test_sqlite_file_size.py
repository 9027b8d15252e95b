"""SQLite reuses the pages retention frees: under a steady load the file stays flat."""

from __future__ import annotations

import itertools
import sqlite3
import time
from datetime import timedelta
from pathlib import Path

import pytest

from pushcore.domain.states import DeliveryStatus, NotificationStatus
from pushcore.storage.sqlite import SqliteStore
from pushcore.storage.sqlite import store as sqlite_module
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


def test_the_wal_starts_over_under_a_steady_write_load(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Checkpoints every 20 ms, a reset past 64 frames: a second of steady
    # writes then stands for minutes of a real load. Writers never pause, so a
    # checkpoint outside the writers' lock alone never lets the file start over.
    monkeypatch.setattr(sqlite_module, "CHECKPOINT_INTERVAL", 0.02)
    monkeypatch.setattr(sqlite_module, "WAL_RESET_FRAMES", 64)
    path = tmp_path / "pushcore.db"
    store = SqliteStore(path)
    ids = itertools.count()
    sizes: list[int] = []
    try:
        deadline = time.monotonic() + 1.5
        while time.monotonic() < deadline:
            with store.transaction() as tx:
                for _ in range(20):
                    n = next(ids)
                    tx.notifications.add(
                        make_notification(f"ntf_{n:08d}", metadata={"k": "x" * 200})
                    )
            sizes.append(path.with_name("pushcore.db-wal").stat().st_size)
    finally:
        store.close()
    written = next(ids) * 600  # bytes of rows alone; the WAL holds pages, more than that
    # Bounded by what a few checkpoint intervals write, not by everything written.
    assert max(sizes[len(sizes) // 2 :]) < written / 4, (max(sizes), written)

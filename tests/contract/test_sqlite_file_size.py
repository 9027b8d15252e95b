"""SQLite reuses the pages retention frees: under a steady load the file stays flat."""

from __future__ import annotations

import itertools
import sqlite3
import threading
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


def test_the_wal_starts_over_while_writers_never_pause(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Under a steady load a write transaction is always open when the
    # checkpoint runs; SQLite then never starts the WAL over by itself. Each
    # cycle here holds one open across the checkpoint, deterministically.
    monkeypatch.setattr(sqlite_module, "CHECKPOINT_INTERVAL", 3600.0)  # ours are explicit
    monkeypatch.setattr(sqlite_module, "WAL_RESET_FRAMES", 64)
    path = tmp_path / "pushcore.db"
    store = SqliteStore(path)
    ids = itertools.count()
    sizes: list[int] = []

    def write(inside: threading.Event | None = None, go: threading.Event | None = None) -> None:
        with store.transaction() as tx:
            for _ in range(50):
                n = next(ids)
                tx.notifications.add(make_notification(f"ntf_{n:08d}", metadata={"k": "x" * 300}))
            if inside is not None and go is not None:
                inside.set()
                assert go.wait(10)

    try:
        for _ in range(40):
            inside, go = threading.Event(), threading.Event()
            writer = threading.Thread(target=write, args=(inside, go))
            writer.start()
            assert inside.wait(10)
            checkpoint = threading.Thread(target=store.checkpoint)
            checkpoint.start()
            time.sleep(0.01)  # the checkpoint runs (or waits) while the writer is open
            go.set()
            writer.join()
            checkpoint.join()
            write()
            sizes.append(path.with_name("pushcore.db-wal").stat().st_size)
    finally:
        store.close()
    # Bounded by a cycle or two past the reset threshold, not by all 40 cycles'
    # pages: without the reset the file grows every cycle (to 14 MB here).
    assert sizes[-1] == max(sizes[10:]) <= 3 * sizes[5], sizes

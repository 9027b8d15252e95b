"""The inbox's write cost for one stream send to many subscribers, on SQLite.

    .venv/bin/python -m benchmarks.inbox [--subscribers 100000] [--rounds 3]

Two ways to keep an inbox, timed as the transaction of a stream send would
write them (the median of ``--rounds``, each on a fresh copy of the database):

- an entry per recipient, written at fan-out: the repository's own
  ``tx.inbox.fan_out`` (one INSERT ... SELECT over the subscriptions, and the
  table's indexes as migrated);
- one shared record per send (a row naming the notification and the stream),
  with per-account read state written only when an account reads or
  dismisses (so nothing per recipient at send time).

Beside them, for scale, the delivery fan-out the same send already pays when
every subscriber has one device (``tx.schedule.fan_out``). Printed, not written
to docs (docs/architecture.md quotes a run).
"""

from __future__ import annotations

import argparse
import shutil
import sqlite3
import statistics
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import attrs

from benchmarks.apns import notification as plain_notification
from pushcore.domain.model import Notification, StreamRef
from pushcore.ports import Transaction
from pushcore.storage.sqlite import SqliteStore
from pushcore.storage.sqlite.dialect import to_ms

NOW = datetime(2026, 11, 26, tzinfo=UTC)
STREAM = "str_bench"


def populate(path: Path, subscribers: int) -> None:
    """A migrated database with ``subscribers`` subscriptions, each with one device."""
    SqliteStore(path).close()
    with sqlite3.connect(path) as conn:
        conn.executemany(
            "INSERT INTO subscriptions (id, account_id, stream_id, created_at) VALUES (?,?,?,?)",
            ((f"sub_{i:08d}", f"acct_{i:08d}", STREAM, to_ms(NOW)) for i in range(subscribers)),
        )
        conn.executemany(
            "INSERT INTO devices (id, account_id, platform, token, name, created_at, is_active)"
            " VALUES (?,?,'android',?,NULL,?,1)",
            ((f"dev_{i:08d}", f"acct_{i:08d}", f"tok{i}", to_ms(NOW)) for i in range(subscribers)),
        )
        conn.execute(
            "CREATE TABLE shared_inbox (seq INTEGER PRIMARY KEY AUTOINCREMENT,"
            " notification_id TEXT NOT NULL, stream_id TEXT NOT NULL, delivered_at INTEGER)"
        )


def notification(i: int) -> Notification:
    """A stream send's notification."""
    return attrs.evolve(
        plain_notification(i),
        id=f"ntf_bench{i:04d}",
        account_id="acct_publisher",
        scheduled_at=NOW,
        created_at=NOW,
        stream=StreamRef(STREAM, "Bench", "bench-2345"),
    )


def per_recipient(tx: Transaction, n: Notification) -> None:
    tx.inbox.fan_out(n, STREAM, NOW)


def shared(tx: Transaction, n: Notification) -> None:
    tx.notifications.add(n)  # both ways store the notification; timed here for fairness
    sql = tx.inbox._sql  # type: ignore[attr-defined]  # the benchmark's own table
    sql.run(
        "INSERT INTO shared_inbox (notification_id, stream_id, delivered_at) VALUES (?, ?, ?)",
        (n.id, STREAM, to_ms(NOW)),
    )


def deliveries(tx: Transaction, n: Notification) -> None:
    tx.schedule.fan_out(n, STREAM, NOW)


def timed(template: Path, work: Callable[[Transaction, Notification], None], round_: int) -> float:
    """Seconds for ``work``'s transaction (COMMIT included) on a fresh copy of ``template``."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.db"
        shutil.copy(template, path)
        store = SqliteStore(path)
        try:
            n = notification(round_)
            if work is not shared:
                with store.transaction() as tx:
                    tx.notifications.add(n)
            started = time.perf_counter()
            with store.transaction() as tx:
                work(tx, n)
            return time.perf_counter() - started
        finally:
            store.close()


def main() -> None:
    """Run and print."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--subscribers", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        template = Path(tmp) / "template.db"
        populate(template, args.subscribers)
        print(
            f"one stream send to {args.subscribers:,} subscribers, SQLite (median of {args.rounds})"
        )
        for name, work in (
            ("an entry per recipient (inbox.fan_out)", per_recipient),
            ("a shared record per send", shared),
            ("for scale: the delivery fan-out", deliveries),
        ):
            seconds = statistics.median(timed(template, work, r) for r in range(args.rounds))
            print(f"  {name:<42} {seconds * 1000:9.1f} ms")


if __name__ == "__main__":
    main()

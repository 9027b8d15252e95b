"""Stats benchmark: GET /api/notifications/stats latency with a small and a large history.

    .venv/bin/python -m benchmarks.stats [--sizes 1000 1000000] [--requests 200]

For each size, an account gets that many notifications (spread over the last
20 days, mostly DELIVERED, some FAILED, QUEUED and CANCELLED, one delivery
each), written through the store's repositories in large transactions, so
their counters are kept as the server keeps them. Then one `pushctl serve`
(SQLite, rate limiting off) answers ``--requests`` sequential GETs over one
keep-alive connection; p50 and p99 of the client-side latency are printed
and written to docs/benchmarks.md (section "Stats"), beside the time the
scanning query the counters replaced takes on the same data, in process.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx

from benchmarks.report import write_section
from benchmarks.scheduling import percentile, start_server, stop_server
from pushcore.domain.model import Delivery, IconStyle, Notification, Priority, Sound
from pushcore.domain.states import DeliveryStatus, NotificationStatus
from pushcore.storage.sqlite import SqliteStore
from tests.contract.test_counters_contract import recount
from tests.e2e.server import free_port

ACCOUNT = "bench"
CHUNK = 20_000
# Of every 20 notifications: 16 delivered, 2 failed, 1 queued, 1 cancelled.
MIX = (
    [NotificationStatus.DELIVERED] * 16
    + [NotificationStatus.FAILED] * 2
    + [
        NotificationStatus.QUEUED,
        NotificationStatus.CANCELLED,
    ]
)
DELIVERY = {
    NotificationStatus.DELIVERED: DeliveryStatus.DELIVERED,
    NotificationStatus.FAILED: DeliveryStatus.FAILED,
    NotificationStatus.QUEUED: DeliveryStatus.PENDING,
    NotificationStatus.CANCELLED: DeliveryStatus.CANCELLED,
}


def fill(store: SqliteStore, count: int, now: datetime) -> None:
    """``count`` notifications with one delivery each, through the repositories."""
    span = timedelta(days=20) / count
    for start in range(0, count, CHUNK):
        with store.transaction() as tx:
            deliveries = []
            for i in range(start, min(count, start + CHUNK)):
                status = MIX[i % len(MIX)]
                created = now - timedelta(days=20) + i * span
                settled = None if status is NotificationStatus.QUEUED else created
                n = Notification(
                    id=f"ntf_{i:026d}", account_id=ACCOUNT, title="bench", body="",
                    icon_style=IconStyle.BELL, sound=Sound.DEFAULT, priority=Priority.NORMAL,
                    delay="5s", custom_delay=None, target_device_token=None, metadata={},
                    scheduled_at=now + timedelta(days=1) if settled is None else created,
                    sender_name=None, sender_icon=None, status=status, created_at=created,
                    devices_targeted=1, settled_at=settled,
                )  # fmt: skip
                tx.notifications.add(n)
                deliveries.append(
                    Delivery(
                        f"dlv_{i:026d}",
                        n.id,
                        ACCOUNT,
                        "dev_bench",
                        DELIVERY[status],
                        n.scheduled_at,
                        settled_at=settled,
                    )
                )
            tx.schedule.add_many(deliveries)


def scan_ms(store: SqliteStore, now: datetime) -> float:
    """The median time of the scanning stats query the counters replaced, in process."""
    times = []
    for _ in range(5):
        with store.read() as tx:
            began = time.perf_counter()
            recount(tx, ACCOUNT, now - timedelta(hours=24))
            times.append((time.perf_counter() - began) * 1000)
    return statistics.median(times)


def measure(count: int, requests: int) -> tuple[float, float, float, float]:
    """(fill seconds, p50 ms, p99 ms, scan ms) with ``count`` notifications in the account."""
    with tempfile.TemporaryDirectory() as tmp:
        data_dir, now = Path(tmp) / "data", datetime.now(UTC)
        store = SqliteStore(data_dir / "pushcore.db")
        began = time.perf_counter()
        fill(store, count, now)
        filled = time.perf_counter() - began
        scan = scan_ms(store, now)
        store.close()
        port = free_port()
        server = start_server(data_dir, port)
        try:
            command = [sys.executable, "-m", "pushcore_cli.main", "--data-dir", str(data_dir)]
            token = subprocess.run(
                [*command, "token", "issue", ACCOUNT], capture_output=True, text=True, check=True
            ).stdout.strip()
            with httpx.Client(base_url=f"http://127.0.0.1:{port}") as client:
                key = client.post(
                    "/api/keys",
                    json={"name": "bench", "scopes": ["notifications:read"]},
                    headers={"Authorization": f"Bearer {token}"},
                ).json()["key"]
                headers = {"X-API-Key": key}
                first = client.get("/api/notifications/stats", headers=headers).json()
                assert first["total"] == count, first
                latencies = []
                for _ in range(requests):
                    began = time.perf_counter()
                    response = client.get("/api/notifications/stats", headers=headers)
                    latencies.append((time.perf_counter() - began) * 1000)
                    response.raise_for_status()
        finally:
            stop_server(server)
    return filled, percentile(latencies, 0.5), percentile(latencies, 0.99), scan


def main() -> None:
    """Measure each size, print and record the table."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 1_000_000])
    parser.add_argument("--requests", type=int, default=200)
    args = parser.parse_args()
    rows = []
    for size in args.sizes:
        filled, p50, p99, scan = measure(size, args.requests)
        rows.append(f"| {size:,} | {p50:.2f} | {p99:.2f} | {scan:.1f} |")
        print(rows[-1], f"(filled in {filled:.0f} s)", flush=True)
    body = "\n".join(
        [
            f"One `pushctl serve` (SQLite, `PUSHCORE_RATE_LIMIT=0`), {args.requests} sequential"
            " GET /api/notifications/stats over one keep-alive connection, client-side"
            " latency (`python -m benchmarks.stats --sizes "
            + " ".join(str(s) for s in args.sizes)
            + "`). The last column is the scanning query the counters replaced, timed in"
            " process on the same data (median of 5).",
            "",
            "| notifications in the account | p50 ms | p99 ms | the old scan, ms |",
            "|---|---|---|---|",
            *rows,
        ]
    )
    print(body)
    write_section("Stats", body)


if __name__ == "__main__":
    main()

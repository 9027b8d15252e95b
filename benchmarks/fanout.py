"""Fan-out benchmark: one stream send to 100,000 subscriber devices.

    .venv/bin/python -m benchmarks.fanout [--devices 100000]

Subscribers (one webhook device each, pointing at a receiver on loopback)
are bulk-inserted through the store port; a real `pushctl serve` process
(SQLite) then takes one POST /api/streams/:id/send. Reported: how long the
send takes to be accepted (its 201), and how long until the last delivery
reaches the receiver.

Results are printed and written to docs/benchmarks.md (section "Fan-out").
"""

from __future__ import annotations

import argparse
import os
import platform
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx

from benchmarks.receiver import BenchReceiver
from benchmarks.report import write_section
from benchmarks.scheduling import rss_mb, start_server, stop_server
from pushcore import build_services, load_settings
from pushcore.adapters.system import UlidGenerator
from pushcore.domain.inputs import NewStream
from pushcore.domain.model import Account, Device, Plan, Platform, Subscription


def populate(data_dir: Path, receiver_port: int, devices: int) -> tuple[str, float, str]:
    """A stream of account "creator" with ``devices`` subscribers, one webhook device each."""
    settings = load_settings(env={"PUSHCORE_ALLOW_PRIVATE_NETWORKS": "true"}, data_dir=data_dir)
    services = build_services(settings)
    services.accounts.set_plan("creator", Plan.PRO)
    stream = services.streams.create("creator", NewStream(name="Launches")).stream
    started = time.monotonic()
    now = datetime.now(UTC)
    ids = UlidGenerator()
    batch = 10_000
    for start in range(0, devices, batch):
        with services.store.transaction() as tx:
            for i in range(start, min(devices, start + batch)):
                account = f"user{i:06d}"
                tx.accounts.ensure(Account(account, Plan.FREE, now))
                tx.devices.add(
                    Device(
                        id=ids.new_id("dev"),
                        account_id=account,
                        platform=Platform.WEBHOOK,
                        token=f"http://127.0.0.1:{receiver_port}/hook/{i}",
                        name=None,
                        created_at=now,
                    )
                )
                tx.subscriptions.add(Subscription(ids.new_id("sub"), account, stream.id, now))
    seconds = time.monotonic() - started
    token = services.tokens.issue("creator", timedelta(hours=1))
    services.close()
    return stream.id, seconds, token


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--devices", type=int, default=100_000)
    parser.add_argument("--no-write", action="store_true", help="print only")
    args = parser.parse_args()

    receiver = BenchReceiver().start()
    with tempfile.TemporaryDirectory() as tmp:
        data_dir = Path(tmp)
        stream_id, setup_seconds, token = populate(data_dir, receiver.port, args.devices)
        print(f"{args.devices} subscriber devices inserted in {setup_seconds:.0f} s", flush=True)
        port = 19_000 + os.getpid() % 1000
        server = start_server(data_dir, port)
        base = f"http://127.0.0.1:{port}"
        key = httpx.post(
            f"{base}/api/keys",
            json={"name": "bench", "scopes": ["notifications:write", "notifications:read"]},
            headers={"Authorization": f"Bearer {token}"},
        ).json()["key"]
        time.sleep(1)
        started = time.monotonic()
        response = httpx.post(
            f"{base}/api/streams/{stream_id}/send",
            json={"title": "We launched", "body": "fan-out benchmark"},
            headers={"X-API-Key": key},
            timeout=120,
        )
        accepted = time.monotonic() - started
        assert response.status_code == 201, response.text
        sent = response.json()["sent"]
        print(f"accepted in {accepted * 1000:.0f} ms, sent={sent}", flush=True)
        peak_rss = rss_mb(server.pid)
        deadline = started + 600
        while len(receiver.received) < sent and time.monotonic() < deadline:
            time.sleep(0.05)
            peak_rss = max(peak_rss, rss_mb(server.pid))
        last = max(arrived for arrived, _, _ in receiver.received)
        first = min(arrived for arrived, _, _ in receiver.received)
        wall_start = time.time() - (time.monotonic() - started)
        all_delivered = last - wall_start
        unique = len({(n, a) for a, n, _ in receiver.received})
        print(
            f"received {len(receiver.received)} in {all_delivered:.1f} s"
            f" (first after {(first - wall_start) * 1000:.0f} ms), peak RSS {peak_rss:.0f} MB",
            flush=True,
        )
        status = httpx.get(
            f"{base}/api/notifications/{response.json()['notificationId']}",
            headers={"X-API-Key": key},
        ).json()
        deadline = time.monotonic() + 60
        while status["status"] == "QUEUED" and time.monotonic() < deadline:
            time.sleep(0.5)
            status = httpx.get(
                f"{base}/api/notifications/{response.json()['notificationId']}",
                headers={"X-API-Key": key},
            ).json()
        stop_server(server)
    receiver.stop()

    body = f"""Command: `.venv/bin/python -m benchmarks.fanout --devices {args.devices}`

Run on {datetime.now(UTC):%Y-%m-%d}: {platform.platform()}, Python {platform.python_version()},
{os.cpu_count()} cores. One `pushctl serve` process on SQLite; {args.devices:,} subscribers
with one webhook device each, all pointing at a raw-asyncio receiver on loopback in the
benchmark process (so the receiver shares the machine's two cores with the server).

| measure | result | target |
|---|---|---|
| send accepted (201) | {accepted * 1000:.0f} ms | <= 1 s |
| last delivery received | {all_delivered:.1f} s after the send | <= 30 s |
| deliveries received | {len(receiver.received):,} ({unique:,} unique of {sent:,}) | all |
| throughput | {len(receiver.received) / max(all_delivered, 1e-9):,.0f}/s | |
| server peak RSS | {peak_rss:.0f} MB | |
| final status | {status["status"]}, {status["deliveries"]} | DELIVERED |
"""
    print(body)
    if not args.no_write:
        write_section("Fan-out", body)


if __name__ == "__main__":
    main()

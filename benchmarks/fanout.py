"""Fan-out benchmark: one stream send to 100,000 subscriber devices.

    .venv/bin/python -m benchmarks.fanout [--devices 100000]
    .venv/bin/python -m benchmarks.fanout --postgres [--database-url URL] [--workers 1,2]
        [--rounds 1] [--devices 100000]

Subscribers (one webhook device each, pointing at a receiver on loopback)
are bulk-inserted through the store port; a real `pushctl serve` process
(SQLite) then takes one POST /api/streams/:id/send. Reported: how long the
send takes to be accepted (its 201), and how long until the last delivery
reaches the receiver.

Results are printed and written to docs/benchmarks.md (section "Fan-out").

With ``--postgres`` (a throwaway cluster, benchmarks/processes.py) or
``--database-url`` (a server of yours), the same on PostgreSQL: the
subscribers are inserted once into a database that each run copies (CREATE
DATABASE ... TEMPLATE); the send goes to one `pushctl serve --no-engine` and
is delivered by 1, then 2 `pushctl worker` processes. Printed: the delivery
rate from the first arrival to the last, and the cores each process used;
not written (benchmarks/postgres.py writes the PostgreSQL section).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import tempfile
import time
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx

from benchmarks.processes import Deployment, Postgres, library_settings, postgres, rss_mb
from benchmarks.receiver import BenchReceiver
from benchmarks.report import write_section
from benchmarks.scheduling import cores_text
from pushcore import build_services
from pushcore.domain.inputs import NewStream
from pushcore.domain.model import Account, Device, Plan, Platform, Subscription
from pushcore.runtime.system import UlidGenerator


def populate(
    data_dir: Path, receiver_port: int, devices: int, database_url: str | None = None
) -> tuple[str, float, str]:
    """A stream of account "creator" with ``devices`` subscribers, one webhook device each."""
    services = build_services(library_settings(data_dir, database_url))
    services.accounts.set_plan("creator", Plan.PRO)
    stream = asyncio.run(services.streams.create("creator", NewStream(name="Launches"))).stream
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


def send(
    deployment: Deployment,
    receiver: BenchReceiver,
    stream_id: str,
    token: str,
    cpu_extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """One POST /api/streams/:id/send to ``deployment``; waits for every delivery.

    Returns when it was accepted, when the first and last deliveries arrived
    (seconds after the send), how many arrived (and how many unique), the
    delivery rate (first to last arrival), the peak RSS of the API process,
    the notification's final status, and the cores each process used from
    the send to the last arrival.
    """
    receiver.received.clear()
    base = deployment.url
    key = httpx.post(
        f"{base}/api/keys",
        json={"name": "bench", "scopes": ["notifications:write", "notifications:read"]},
        headers={"Authorization": f"Bearer {token}"},
    ).json()["key"]
    time.sleep(1)
    server = deployment.servers[0]
    window = deployment.cpu_window(cpu_extra)
    wall_start = time.time()
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
    cores = window.stop()
    last = max(arrived for arrived, _, _ in receiver.received)
    first = min(arrived for arrived, _, _ in receiver.received)
    received = len(receiver.received)
    unique = len({(n, a) for a, n, _ in receiver.received})
    print(
        f"received {received} in {last - wall_start:.1f} s"
        f" (first after {(first - wall_start) * 1000:.0f} ms), peak RSS {peak_rss:.0f} MB",
        flush=True,
    )
    url = f"{base}/api/notifications/{response.json()['notificationId']}"
    status = httpx.get(url, headers={"X-API-Key": key}).json()
    deadline = time.monotonic() + 60
    while status["status"] == "QUEUED" and time.monotonic() < deadline:
        time.sleep(0.5)
        status = httpx.get(url, headers={"X-API-Key": key}).json()
    return {
        "accepted": accepted,
        "first": first - wall_start,
        "last": last - wall_start,
        "sent": sent,
        "received": received,
        "unique": unique,
        "rate": (received - 1) / (last - first) if last > first else float("nan"),
        "peak_rss": peak_rss,
        "status": status,
        "cores": cores,
    }


def postgres_fanout(
    pg: Postgres, receiver: BenchReceiver, devices: int, workers: list[int], rounds: int
) -> dict[int, list[dict[str, Any]]]:
    """The send on PostgreSQL: one `serve --no-engine` beside each count of `pushctl
    worker`, ``rounds`` times, alternating; each run on a fresh copy of one populated
    database."""
    runs: dict[int, list[dict[str, Any]]] = {n: [] for n in workers}
    with tempfile.TemporaryDirectory() as tmp:
        data_dir = Path(tmp)
        populated = pg.fresh()
        stream_id, seconds, token = populate(data_dir, receiver.port, devices, populated)
        print(f"{devices} subscriber devices inserted in {seconds:.0f} s", flush=True)
        for _ in range(rounds):
            for n in workers:
                url = pg.fresh(template=pg.name_of(populated))
                with Deployment(data_dir, url, engine=False, workers=n) as deployment:
                    result = send(
                        deployment, receiver, stream_id, token, {"postgres": pg.server_pids}
                    )
                runs[n].append(result)
                print(
                    f"PostgreSQL, {n} worker(s): {result['rate']:,.0f}/s first to last;"
                    f" cores: {cores_text(result['cores'])}",
                    flush=True,
                )
    return runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--devices", type=int, default=100_000)
    parser.add_argument("--no-write", action="store_true", help="print only")
    parser.add_argument(
        "--postgres", action="store_true", help="on a throwaway PostgreSQL cluster (print only)"
    )
    parser.add_argument("--database-url", help="as --postgres, on this server")
    parser.add_argument("--workers", default="1,2", help="with --postgres: worker counts")
    parser.add_argument("--rounds", type=int, default=1, help="with --postgres: runs of each")
    args = parser.parse_args()

    receiver = BenchReceiver().start()
    if args.postgres or args.database_url:
        try:
            with postgres(args.database_url) as pg:
                workers = [int(n) for n in args.workers.split(",")]
                postgres_fanout(pg, receiver, args.devices, workers, args.rounds)
        finally:
            receiver.stop()
        return
    with tempfile.TemporaryDirectory() as tmp:
        data_dir = Path(tmp)
        stream_id, setup_seconds, token = populate(data_dir, receiver.port, args.devices)
        print(f"{args.devices} subscriber devices inserted in {setup_seconds:.0f} s", flush=True)
        with Deployment(data_dir) as deployment:
            r = send(deployment, receiver, stream_id, token)
    receiver.stop()
    accepted, all_delivered, sent, status = r["accepted"], r["last"], r["sent"], r["status"]
    peak_rss, unique = r["peak_rss"], r["unique"]

    body = f"""Command: `.venv/bin/python -m benchmarks.fanout --devices {args.devices}`

Run on {datetime.now(UTC):%Y-%m-%d}: {platform.platform()}, Python {platform.python_version()},
{os.cpu_count()} cores. One `pushctl serve` process on SQLite; {args.devices:,} subscribers
with one webhook device each, all pointing at a raw-asyncio receiver on loopback in the
benchmark process (so the receiver shares the machine's two cores with the server).

| measure | result | target |
|---|---|---|
| send accepted (201) | {accepted * 1000:.0f} ms | <= 1 s |
| last delivery received | {all_delivered:.1f} s after the send | <= 30 s |
| deliveries received | {r["received"]:,} ({unique:,} unique of {sent:,}) | all |
| throughput | {r["received"] / max(all_delivered, 1e-9):,.0f}/s | |
| server peak RSS | {peak_rss:.0f} MB | |
| final status | {status["status"]}, {status["deliveries"]} | DELIVERED |
"""
    print(body)
    if not args.no_write:
        write_section("Fan-out", body)


if __name__ == "__main__":
    main()

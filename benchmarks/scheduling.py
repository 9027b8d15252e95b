"""Scheduling benchmark: how late do due notifications arrive, and what does a backlog cost?

    .venv/bin/python -m benchmarks.scheduling [--count 10000] [--rate 1000] [--backlog 1000000]
    .venv/bin/python -m benchmarks.scheduling --postgres [--database-url URL] [--workers 1,2]
        [--count 10000] [--rate 1000]

A real `pushctl serve` process (SQLite, the embedded default) delivers to a
webhook receiver on loopback. Notifications are created through the library
on the same database, due at a steady rate; lateness is receive time minus
scheduledAt. Then a backlog of pending notifications (due in a week) is
inserted and the server's resident memory is read with and without it, and
the lateness run is repeated on top of the backlog.

Results are printed and written to docs/benchmarks.md (section "Scheduling").

With ``--postgres`` (a throwaway cluster, benchmarks/processes.py) or
``--database-url`` (a server of yours; a fresh database per run), only the
lateness run, on PostgreSQL: one `pushctl serve --no-engine` beside 1, then 2
`pushctl worker` processes, each on a fresh database; printed with the cores
each process (and PostgreSQL) used, not written (benchmarks/postgres.py writes
the PostgreSQL section).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import statistics
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from benchmarks.processes import (
    CpuWindow,
    Deployment,
    Postgres,
    library_settings,
    postgres,
    rss_mb,
    start_server,
    stop_server,
)
from benchmarks.receiver import BenchReceiver
from benchmarks.report import write_section
from pushcore import Services, build_services, load_settings
from pushcore.consistency import new_deliveries
from pushcore.converter import structure_request
from pushcore.domain.inputs import NewDevice, NewNotification
from pushcore.domain.model import IconStyle, Notification, Platform, Priority, Sound
from pushcore.domain.states import NotificationStatus
from pushcore.runtime.system import UlidGenerator

# Importers of the helpers that lived here (fanout, apns, stats, fairness, ...) keep working.
__all__ = ["percentile", "rss_mb", "start_server", "stop_server"]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def schedule(services: Services, count: int, rate: float, lead: float) -> float:
    """Create ``count`` notifications due at ``rate`` per second from now + ``lead``; T0."""
    start = datetime.now(UTC) + timedelta(seconds=lead)

    async def create_all() -> None:
        # One after the other, each awaiting its commit, as one client would.
        for i in range(count):
            at = start + timedelta(seconds=i / rate)
            request = structure_request(
                NewNotification, {"title": f"bench {i}", "scheduledAt": at.isoformat()}
            )
            await services.notifications.create("bench", request)

    asyncio.run(create_all())
    left = (start - datetime.now(UTC)).total_seconds()
    if left < 1:
        raise RuntimeError(f"creating took too long; raise the lead (short by {-left:.1f} s)")
    return start.timestamp()


def measure_lateness(
    services: Services,
    receiver: BenchReceiver,
    count: int,
    rate: float,
    cpu: Callable[[], CpuWindow] | None = None,
) -> dict[str, Any]:
    """Lateness of ``count`` notifications due at ``rate``/s; with ``cpu``, the cores
    each process used from the first due time to the last arrival (``cores``)."""
    receiver.received.clear()
    # Creation runs at 1,000-3,000/s here (slower with a million rows pending): room
    # for the slow end, so that every notification exists before the first is due.
    lead = 5 + count / 500
    t0 = schedule(services, count, rate, lead)
    window = None
    if cpu is not None:
        time.sleep(max(0.0, t0 - time.time()))
        window = cpu()
    deadline = t0 + count / rate + 60
    while len(receiver.received) < count and time.time() < deadline:
        time.sleep(0.2)
    cores = window.stop() if window is not None else {}
    got = list(receiver.received)
    late_ms = [
        (arrived - datetime.fromisoformat(scheduled).timestamp()) * 1000
        for arrived, _, scheduled in got
    ]
    span = max(a for a, _, _ in got) - min(a for a, _, _ in got)
    return {
        "received": len(got),
        "unique": len({n for _, n, _ in got}),
        "p50": statistics.median(late_ms),
        "p99": percentile(late_ms, 0.99),
        "max": max(late_ms),
        "min": min(late_ms),
        "throughput": (len(got) - 1) / span if span > 0 else float("nan"),
        "cores": cores,
    }


def postgres_lateness(
    pg: Postgres, receiver: BenchReceiver, workers: int, count: int, rate: float
) -> dict[str, Any]:
    """measure_lateness on a fresh PostgreSQL database, delivered by ``workers``
    `pushctl worker` processes beside one `pushctl serve --no-engine`."""
    with tempfile.TemporaryDirectory() as tmp:
        data_dir = Path(tmp)
        url = pg.fresh()
        services = build_services(library_settings(data_dir, url))
        try:
            services.accounts.ensure("bench")
            services.devices.register(
                "bench",
                NewDevice(
                    token=f"http://127.0.0.1:{receiver.port}/hook", platform=Platform.WEBHOOK
                ),
            )
            with Deployment(data_dir, url, engine=False, workers=workers) as deployment:
                extra = {"postgres": pg.server_pids}
                return measure_lateness(
                    services, receiver, count, rate, lambda: deployment.cpu_window(extra)
                )
        finally:
            services.close()


def cores_text(cores: dict[str, float]) -> str:
    """Cores used per process, e.g. "worker-1 0.62, postgres 0.40, machine 1.9 of 2"."""
    named = [f"{name} {used:.2f}" for name, used in cores.items() if name != "machine"]
    machine = f"machine {cores['machine']:.1f} of {os.cpu_count()}" if "machine" in cores else ""
    return ", ".join([*named, *([machine] if machine else [])])


def insert_backlog(services: Services, count: int, device_id: str) -> float:
    """``count`` pending notifications due in a week, bulk-inserted through the store port."""
    started = time.monotonic()
    now = datetime.now(UTC)
    due = now + timedelta(days=7)
    with services.store.read() as tx:
        device = next(d for d in tx.devices.list("bench") if d.id == device_id)
    ids = UlidGenerator()
    batch = 10_000
    for start in range(0, count, batch):
        with services.store.transaction() as tx:
            for i in range(start, min(count, start + batch)):
                notification = Notification(
                    id=ids.new_id("ntf"),
                    account_id="bench",
                    title=f"backlog {i}",
                    body="",
                    icon_style=IconStyle.BOLT,
                    sound=Sound.DEFAULT,
                    priority=Priority.NORMAL,
                    delay="5s",
                    custom_delay=None,
                    target_device_token=None,
                    metadata={},
                    scheduled_at=due + timedelta(milliseconds=i),
                    sender_name=None,
                    sender_icon=None,
                    status=NotificationStatus.QUEUED,
                    created_at=now,
                    devices_targeted=1,
                )
                tx.notifications.add(notification)
                tx.schedule.add_many(new_deliveries(ids, notification, [device], due))
    return time.monotonic() - started


def postgres_main(args: argparse.Namespace) -> None:
    """The lateness run on PostgreSQL with each worker count, printed."""
    with postgres(args.database_url) as pg:
        receiver = BenchReceiver().start()
        try:
            for workers in (int(n) for n in args.workers.split(",")):
                result = postgres_lateness(pg, receiver, workers, args.count, args.rate)
                cores = cores_text(result.pop("cores"))
                print(f"PostgreSQL, {workers} worker(s): {result}; cores: {cores}", flush=True)
        finally:
            receiver.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=10_000)
    parser.add_argument("--rate", type=float, default=1000.0)
    parser.add_argument("--backlog", type=int, default=1_000_000)
    parser.add_argument("--no-write", action="store_true", help="print only")
    parser.add_argument(
        "--postgres",
        action="store_true",
        help="on a throwaway PostgreSQL cluster instead (lateness only, print only)",
    )
    parser.add_argument(
        "--database-url", help="as --postgres, on this server (a fresh database per run)"
    )
    parser.add_argument("--workers", default="1,2", help="with --postgres: worker counts")
    args = parser.parse_args()
    if args.postgres or args.database_url:
        postgres_main(args)
        return

    receiver = BenchReceiver().start()
    with tempfile.TemporaryDirectory() as tmp:
        data_dir = Path(tmp)
        settings = load_settings(env={"PUSHCORE_ALLOW_PRIVATE_NETWORKS": "true"}, data_dir=data_dir)
        services = build_services(settings)
        services.accounts.ensure("bench")
        device = services.devices.register(
            "bench",
            NewDevice(token=f"http://127.0.0.1:{receiver.port}/hook", platform=Platform.WEBHOOK),
        ).device
        port = 18_000 + os.getpid() % 1000
        server = start_server(data_dir, port)
        time.sleep(2)
        rss_empty = rss_mb(server.pid)
        print(f"server RSS, nothing pending: {rss_empty:.1f} MB", flush=True)
        plain = measure_lateness(services, receiver, args.count, args.rate)
        print(f"lateness, empty backlog: {plain}", flush=True)
        rss_after_run = rss_mb(server.pid)
        stop_server(server)

        seconds = insert_backlog(services, args.backlog, device.id)
        print(f"inserted {args.backlog} pending in {seconds:.0f} s", flush=True)
        server = start_server(data_dir, port)
        time.sleep(5)
        rss_backlog = rss_mb(server.pid)
        print(f"server RSS, {args.backlog} pending: {rss_backlog:.1f} MB", flush=True)
        loaded = measure_lateness(services, receiver, args.count, args.rate)
        print(f"lateness, with backlog: {loaded}", flush=True)
        rss_backlog_after = rss_mb(server.pid)
        stop_server(server)
        services.close()
    receiver.stop()

    def row(name: str, r: dict[str, Any]) -> str:
        return (
            f"| {name} | {r['received']:,} ({r['unique']:,} unique) | {r['p50']:.1f} |"
            f" {r['p99']:.1f} | {r['max']:.1f} | {r['throughput']:.0f}/s |"
        )

    body = f"""Command: `.venv/bin/python -m benchmarks.scheduling --count {args.count} \
--rate {args.rate:.0f} --backlog {args.backlog}`

Run on {datetime.now(UTC):%Y-%m-%d}: {platform.platform()}, Python {platform.python_version()},
{os.cpu_count()} cores. One `pushctl serve` process on SQLite; a webhook receiver
(raw asyncio) on loopback in the benchmark process; notifications created through the
library on the same database file. Lateness = arrival at the receiver - scheduledAt.

| run | received | p50 ms | p99 ms | max ms | throughput |
|---|---|---|---|---|---|
{row("empty backlog", plain)}
{row(f"{args.backlog:,} pending", loaded)}

Server resident memory (VmRSS): {rss_empty:.1f} MB with nothing pending, \
{rss_after_run:.1f} MB after the first run, {rss_backlog:.1f} MB with \
{args.backlog:,} notifications pending, {rss_backlog_after:.1f} MB after the run on top of it.

Targets: p50 <= 5 ms and p99 <= 20 ms at 1,000 due/s; RSS <= 150 MB with 1,000,000
pending, not growing with the backlog.
"""
    print(body)
    if not args.no_write:
        write_section("Scheduling", body)


if __name__ == "__main__":
    main()

"""Event webhooks: how fast recorded events reach one fast endpoint, and how late.

    .venv/bin/python -m benchmarks.events [--events 5000] [--batch 100] [--runs 3]
        [--rate 0] [--quick] [--write]

In this process: services on SQLite (a temporary data directory), one endpoint
subscribed to everything, and the engine's event sender (``delivery/webhooks.py``)
on the real clock. The endpoint is a raw-asyncio loopback receiver in a process of
its own answering 204 at once (benchmarks/event_receiver.py). Events are recorded
in transactions of ``--batch`` (as the roll-up records a chunk's settled
notifications): as fast as the store takes them, or ``--rate`` a second. Reported
per run: events recorded per second, events delivered per second (first record to
last arrival), the latency from an event's commit to its arrival (p50, p99, max),
and the CPU seconds this process spent per 1,000 events (the sender and the
recording; the receiver's are its own). ``--write`` puts the table in
docs/benchmarks.md ("Event webhooks: throughput").
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import statistics
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from benchmarks.event_receiver import EventReceiver
from benchmarks.processes import library_settings
from benchmarks.report import write_section
from pushcore import build_services
from pushcore.delivery.webhooks import EventSender
from pushcore.domain.events import EventType, NewWebhook
from pushcore.events import record_event
from pushcore.outbound.guard import NetworkGuard
from pushcore.runtime.system import SystemClock

SECTION = "Event webhooks: throughput"


def run(events: int, batch: int, rate: float, sender_only: bool = False) -> dict[str, float]:
    """One run; its figures (``sender_only``: every event recorded before the sender
    starts, and only the sending's CPU counted)."""
    endpoint = EventReceiver()
    with tempfile.TemporaryDirectory() as tmp:
        services = build_services(library_settings(Path(tmp) / "data"))
        services.webhooks.create("bench", NewWebhook(url=endpoint.url(), events=("*",)))
        sender = EventSender(
            services.store, SystemClock(), NetworkGuard(allow_private=True), "bench"
        )
        recorded: dict[str, float] = {}

        def record_all() -> None:
            started = time.monotonic()
            for start in range(0, events, batch):
                if rate:  # the batch is due at its place in the steady stream
                    time.sleep(max(0.0, started + start / rate - time.monotonic()))
                with services.store.transaction() as tx:
                    at = datetime.now(UTC)
                    made = [
                        record_event(
                            tx, "bench", EventType.NOTIFICATION_DELIVERED, at, status="DELIVERED"
                        ).id
                        for _ in range(min(batch, events - start))
                    ]
                now = time.time()  # committed: the change is visible from here
                recorded.update(dict.fromkeys(made, now))

        async def scenario() -> float:
            started = time.time()
            if sender_only:
                record_all()
                recording = time.time() - started
                # Sending from here: its latency and rate counted from here.
                first[0] = time.time()
                recorded.update(dict.fromkeys(recorded, first[0]))
                cpu[0] = time.process_time()
            running = asyncio.ensure_future(sender.run())
            if not sender_only:
                await asyncio.to_thread(record_all)
                recording = time.time() - started
            while await asyncio.to_thread(endpoint.acknowledged) < events:
                await asyncio.sleep(0.05)
            running.cancel()
            await asyncio.gather(running, return_exceptions=True)
            return recording

        cpu, first = [time.process_time()], [time.time()]
        recording = asyncio.run(scenario())
        used = time.process_time() - cpu[0]
        services.close()
    arrived = {i: at for at, i, status in endpoint.arrivals() if status == 204}
    endpoint.stop()
    last = max(arrived.values())
    latencies = sorted(arrived[i] - recorded[i] for i in recorded)
    return {
        "recorded/s": events / recording,
        "delivered/s": events / (last - first[0]),
        "p50 ms": 1000 * statistics.median(latencies),
        "p99 ms": 1000 * latencies[int(0.99 * (len(latencies) - 1))],
        "max ms": 1000 * latencies[-1],
        "CPU s per 1,000": 1000 * used / events,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--events", type=int, default=5000)
    parser.add_argument("--batch", type=int, default=100)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--rate", type=float, default=0.0, help="events a second (0: at once)")
    parser.add_argument(
        "--sender-only",
        action="store_true",
        help="record every event first; count only the sender's CPU (and latency from then)",
    )
    parser.add_argument("--quick", action="store_true", help="1,000 events, 1 run")
    parser.add_argument("--write", action="store_true", help="write docs/benchmarks.md")
    args = parser.parse_args()
    if args.quick:
        args.events, args.runs = 1000, 1
    rows = []
    for n in range(args.runs):
        load = os.getloadavg()[0]
        figures = run(args.events, args.batch, args.rate, args.sender_only)
        line = ", ".join(
            f"{k} {v:,.3f}" if "CPU" in k else f"{k} {v:,.0f}" for k, v in figures.items()
        )
        print(f"run {n + 1} (load {load:.1f}): {line}", flush=True)
        cells = [f"{v:,.2f}" if "CPU" in k else f"{v:,.0f}" for k, v in figures.items()]
        rows.append(f"| {n + 1} | {load:.1f} | " + " | ".join(cells) + " |")
    if args.write:
        paced = f"{args.rate:,.0f} a second" if args.rate else "as fast as the store takes them"
        write_section(
            SECTION,
            f"Command: `.venv/bin/python -m benchmarks.events --events {args.events}"
            f" --batch {args.batch} --runs {args.runs}"
            + (f" --rate {args.rate:g}" if args.rate else "")
            + f" --write`\n\nRun on {datetime.now(UTC):%Y-%m-%d %H:%M} UTC:"
            f" {platform.platform()}, Python {platform.python_version()}, {os.cpu_count()}"
            f" cores; events recorded {args.batch} per transaction, {paced}.\n\n"
            "| run | load | recorded/s | delivered/s | p50 ms | p99 ms | max ms"
            " | CPU s per 1,000 |\n|---|---|---|---|---|---|---|---|\n" + "\n".join(rows),
        )


if __name__ == "__main__":
    main()

"""Event webhooks: how fast recorded events reach one fast endpoint, and how late.

    .venv/bin/python -m benchmarks.events [--events 2000] [--batch 100] [--runs 3]

In this process: services on SQLite (a temporary data directory), one endpoint
subscribed to everything on a loopback receiver that answers 204 at once, and
the engine's event sender (``delivery/webhooks.py``) on the real clock. Events
are recorded in transactions of ``--batch`` (as the roll-up records a chunk's
settled notifications) as fast as the store takes them; the sender posts them
meanwhile. Reported per run: events recorded per second, events delivered per
second (first record to last arrival), and the latency from an event's
record to its arrival (p50, p99, max). Printed, not written to the docs: the
figures in docs/benchmarks.md ("Event webhooks") say on what machine they
were taken.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import threading
import time
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from benchmarks.processes import library_settings
from pushcore import build_services
from pushcore.delivery.webhooks import EventSender
from pushcore.domain.events import EventType, NewWebhook
from pushcore.events import record_event
from pushcore.outbound.guard import NetworkGuard
from pushcore.runtime.system import SystemClock


def receiver(arrived: dict[str, float]) -> ThreadingHTTPServer:
    """A loopback endpoint noting when each event id arrived."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("content-length", "0")))
            arrived[self.headers["webhook-id"]] = time.time()
            self.send_response(204)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def run(events: int, batch: int) -> dict[str, float]:
    """One run; its figures."""
    arrived: dict[str, float] = {}
    server = receiver(arrived)
    with tempfile.TemporaryDirectory() as tmp:
        services = build_services(library_settings(Path(tmp) / "data"))
        url = f"http://127.0.0.1:{server.server_address[1]}/events"
        services.webhooks.create("bench", NewWebhook(url=url, events=("*",)))
        sender = EventSender(
            services.store, SystemClock(), NetworkGuard(allow_private=True), "bench"
        )
        recorded: dict[str, float] = {}

        def record_all() -> None:
            for start in range(0, events, batch):
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
            running = asyncio.ensure_future(sender.run())
            started = time.time()
            await asyncio.to_thread(record_all)
            recording = time.time() - started
            while len(arrived) < events:
                await asyncio.sleep(0.01)
            running.cancel()
            await asyncio.gather(running, return_exceptions=True)
            return recording

        first = time.time()
        recording = asyncio.run(scenario())
        last = max(arrived.values())
        services.close()
    server.shutdown()
    latencies = sorted(arrived[i] - recorded[i] for i in recorded)
    return {
        "recorded_per_s": events / recording,
        "delivered_per_s": events / (last - first),
        "p50_ms": 1000 * statistics.median(latencies),
        "p99_ms": 1000 * latencies[int(0.99 * (len(latencies) - 1))],
        "max_ms": 1000 * latencies[-1],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--events", type=int, default=2000)
    parser.add_argument("--batch", type=int, default=100)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    for n in range(args.runs):
        figures = run(args.events, args.batch)
        print(f"run {n + 1}: " + ", ".join(f"{k} {v:,.0f}" for k, v in figures.items()))


if __name__ == "__main__":
    main()

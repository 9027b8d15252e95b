"""Event webhooks: an endpoint down for a while, then back; does every event arrive?

    .venv/bin/python -m benchmarks.events_outage [--down 600] [--rate 50] [--speed 1]
        [--quick] [--write]

In this process: services on SQLite, one endpoint subscribed to everything and the
engine's event sender (``delivery/webhooks.py``) with its pinned retry schedule (5 s,
5 min, 30 min, ...). The endpoint (benchmarks/event_receiver.py, a process of its
own) answers 204; ``--warm`` seconds in, it answers 503 to everything for
``--down`` seconds, then 204 again. Events are recorded ``--rate`` a second (real
seconds) from the start until ``--warm`` seconds after the return; then the run waits
until every event has been acknowledged once, or ``--give-up`` (clock) seconds
after the return.

``--speed N`` runs the services' and the sender's clock N times faster than the
wall clock (a 10-minute outage and the 30-minute retry after it in well under a
minute at 60); the schedule itself is not changed. Times below are on that clock.

Reported: events recorded; events acknowledged (once at least); events
acknowledged more than once (a repeat after a 2xx: none expected, the receiver
acknowledged every request it answered 2xx); requests answered 503 (the retries
the receiver could not acknowledge); the time from the return to the last first
acknowledgement. ``--write`` puts the table in docs/benchmarks.md ("Event
webhooks: endpoint outage").
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import tempfile
import time
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path

from benchmarks.event_receiver import EventReceiver
from benchmarks.processes import library_settings
from benchmarks.report import write_section
from pushcore import build_services
from pushcore.delivery.webhooks import EventSender
from pushcore.domain.events import EventType, NewWebhook
from pushcore.events import record_event
from pushcore.outbound.guard import NetworkGuard

SECTION = "Event webhooks: endpoint outage"


class ScaledClock:
    """The wall clock's time, running ``speed`` times as fast from when it was made."""

    def __init__(self, speed: float) -> None:
        self._speed = speed
        self._start = datetime.now(UTC)
        self._started = time.monotonic()

    def now(self) -> datetime:
        """This clock's time."""
        return self._start + timedelta(seconds=(time.monotonic() - self._started) * self._speed)

    async def sleep_until(self, when: datetime) -> None:
        """Wait until this clock reaches ``when``."""
        while (wait := (when - self.now()).total_seconds()) > 0:
            await asyncio.sleep(wait / self._speed)


def run(down: float, warm: float, rate: float, speed: float, give_up: float) -> dict[str, float]:
    """One outage; its figures (times in the clock's seconds)."""
    endpoint = EventReceiver()
    clock = ScaledClock(speed)
    made: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        services = build_services(library_settings(Path(tmp) / "data"), clock=clock)
        services.webhooks.create("bench", NewWebhook(url=endpoint.url(), events=("*",)))
        sender = EventSender(services.store, clock, NetworkGuard(allow_private=True), "bench")

        def record_for(seconds: float) -> None:
            """Record ``rate`` events a (real) second for ``seconds`` of this clock."""
            until = clock.now() + timedelta(seconds=seconds)
            tick = max(1, round(rate / 10))  # ten transactions a second
            while clock.now() < until:
                started = time.monotonic()
                with services.store.transaction() as tx:
                    at = clock.now()
                    made.extend(
                        record_event(
                            tx, "bench", EventType.NOTIFICATION_DELIVERED, at, status="DELIVERED"
                        ).id
                        for _ in range(tick)
                    )
                time.sleep(max(0.0, tick / rate - (time.monotonic() - started)))

        async def scenario() -> datetime:
            running = asyncio.ensure_future(sender.run())
            await asyncio.to_thread(record_for, warm)
            await asyncio.to_thread(endpoint.answer, 503)
            await asyncio.to_thread(record_for, down)
            await asyncio.to_thread(endpoint.answer, 204)
            back = clock.now()
            await asyncio.to_thread(record_for, warm)
            deadline = back + timedelta(seconds=give_up)
            while clock.now() < deadline:
                if len({i for _, i, s in endpoint.arrivals() if s == 204}) >= len(made):
                    break
                await asyncio.sleep(0.5)
            running.cancel()
            await asyncio.gather(running, return_exceptions=True)
            return back

        back = asyncio.run(scenario())
        services.close()
    arrivals = endpoint.arrivals()
    endpoint.stop()
    acked = Counter(i for _, i, s in arrivals if s == 204)
    first_ack = {}
    for at, i, s in arrivals:
        if s == 204 and i not in first_ack:
            first_ack[i] = at
    back_wall = time.time() - (clock.now() - back).total_seconds() / speed
    last = max(first_ack.values(), default=back_wall)
    return {
        "recorded": len(made),
        "acknowledged": sum(1 for i in made if i in acked),
        "lost": sum(1 for i in made if i not in acked),
        "acknowledged twice or more": sum(1 for n in acked.values() if n > 1),
        "answered 503": sum(1 for _, _, s in arrivals if s == 503),
        "last after return (s)": (last - back_wall) * speed,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--down", type=float, default=600.0, help="clock seconds down")
    parser.add_argument("--warm", type=float, default=30.0, help="clock seconds before/after")
    parser.add_argument("--rate", type=float, default=50.0, help="events a real second")
    parser.add_argument("--speed", type=float, default=1.0, help="clock speed-up")
    parser.add_argument("--give-up", type=float, default=3 * 3600.0, help="clock seconds")
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--quick", action="store_true", help="--down 600 at --speed 60")
    parser.add_argument("--write", action="store_true", help="write docs/benchmarks.md")
    args = parser.parse_args()
    if args.quick:
        args.speed, args.warm = 60.0, 60.0
    rows = []
    for n in range(args.runs):
        load = os.getloadavg()[0]
        figures = run(args.down, args.warm, args.rate, args.speed, args.give_up)
        print(
            f"run {n + 1} (load {load:.1f}): "
            + ", ".join(f"{k} {v:,.0f}" for k, v in figures.items()),
            flush=True,
        )
        rows.append(
            f"| {n + 1} | {load:.1f} | " + " | ".join(f"{v:,.0f}" for v in figures.values()) + " |"
        )
    if args.write:
        write_section(
            SECTION,
            f"Command: `.venv/bin/python -m benchmarks.events_outage --down {args.down:g}"
            f" --warm {args.warm:g} --rate {args.rate:g} --speed {args.speed:g}"
            f" --runs {args.runs} --write`\n\nRun on {datetime.now(UTC):%Y-%m-%d %H:%M} UTC:"
            f" {platform.platform()}, Python {platform.python_version()}, {os.cpu_count()}"
            f" cores. The endpoint answered 503 for {args.down:g} s (the clock's), events"
            f" recorded {args.rate:g} a real second throughout; times on the clock"
            f" (x{args.speed:g}).\n\n"
            "| run | load | recorded | acknowledged | lost | acknowledged twice or more"
            " | answered 503 | last after return (s) |\n|---|---|---|---|---|---|---|---|\n"
            + "\n".join(rows),
        )


if __name__ == "__main__":
    main()

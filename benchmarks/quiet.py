"""Quiet hours at scale: held deliveries released when the quiet ends, and everyone else's.

    .venv/bin/python -m benchmarks.quiet [--held 100000] [--rate 20] [--repeat 1]
        [--quick] [--no-write]

(``--quick`` is ``--held 10000``.)

In one process, on SQLite: ``--held`` subscriber accounts, each with one android
device and quiet hours (``hold``) that began an hour ago and end 30 minutes from
now, are bulk-inserted through the store port; one stream send to them now goes
through the service, and an engine (with an in-process gateway that answers at
once and notes arrival) claims and HOLDS every delivery (``heldUntil`` the end).
Then another account with no quiet hours gets one-off notifications at
``--rate`` a second, due from 20 s before the quiet's end until 60 s after it,
and the clock (the real one plus an offset, benchmarks/localtime.py) jumps to
25 s before the end. Reported: when the last held delivery reached the gateway
after the end (target: within 60 s), the release's rate, and the other
account's lateness at the gateway (p50, p99, max) before the end and while the
release runs (target: unchanged).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import tempfile
import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from benchmarks.localtime import JumpingClock, NotingGateway, percentile, populate
from benchmarks.processes import library_settings
from benchmarks.report import write_run
from benchmarks.schedules import add_account
from pushcore import build_services
from pushcore.bootstrap import build_engine
from pushcore.domain.inputs import NewNotification, StreamSend
from pushcore.domain.model import Platform
from pushcore.domain.quiet import QuietHours
from pushcore.domain.recipient import RecipientSettings

OTHER = "acct_other"
BEFORE = timedelta(seconds=20)
AFTER = timedelta(seconds=60)


def window(now: datetime) -> tuple[QuietHours, datetime]:
    """Quiet hours (UTC) from an hour ago to 30 minutes from now, and that end's instant."""
    end = now.replace(second=0, microsecond=0) + timedelta(minutes=30)
    start = end - timedelta(minutes=90)
    return QuietHours(start=start.time(), end=end.time()), end


async def until(condition: Any, deadline: float) -> None:
    """Wait (polling) until ``condition()`` holds, or fail past ``deadline`` seconds."""
    ends = time.monotonic() + deadline
    while not condition():
        if time.monotonic() > ends:
            raise SystemExit("the benchmark's wait ran out")
        await asyncio.sleep(0.05)


async def hold_and_release(
    services: Any, clock: JumpingClock, stream_id: str, held: int, end: datetime, rate: float
) -> tuple[NotingGateway, float, float]:
    """Send, hold, then release; the gateway's notes, the hold's seconds and the accept's."""
    gateway = NotingGateway(clock)
    engine = build_engine(services, dict.fromkeys(Platform, gateway))
    runner = asyncio.create_task(engine.run())
    try:
        began = time.monotonic()
        sent = await services.streams.send("creator", stream_id, StreamSend(title="Held"))
        accepted = time.monotonic() - began
        assert sent.sent == held, sent.sent

        def all_held() -> bool:
            with services.store.read() as tx:
                depth = tx.deliveries.queue_depth(clock.now())
            return bool(depth.pending == 0 and depth.in_flight == 0)

        await until(all_held, 3600)
        holding = time.monotonic() - began
        assert not gateway.arrived, "a held delivery went out"
        step = timedelta(seconds=1 / rate)
        at = end - BEFORE
        oneoffs = 0
        while at < end + AFTER:
            await services.notifications.create(OTHER, NewNotification(title="x", scheduled_at=at))
            at, oneoffs = at + step, oneoffs + 1
        clock.jump(end - timedelta(seconds=25) - clock.now())
        await until(lambda: len(gateway.arrived) >= held + oneoffs, 3600)
    finally:
        await engine.stop()
        runner.cancel()
    return gateway, holding, accepted


def run(held: int, rate: float) -> dict[str, Any]:
    """Populate, hold, release; the figures."""
    with tempfile.TemporaryDirectory() as tmp:
        clock = JumpingClock()
        services = build_services(library_settings(Path(tmp)), clock=clock)
        hours, end = window(clock.now())
        settings = RecipientSettings(time_zone="UTC", quiet_hours=hours)
        started = time.monotonic()
        stream_id, _ = populate(services, held, settings)
        other = add_account(services, OTHER, clock.now())
        print(f"{held} subscribers inserted in {time.monotonic() - started:.0f} s", flush=True)
        gateway, holding, accepted = asyncio.run(
            hold_and_release(services, clock, stream_id, held, end, rate)
        )
        services.close()
    released = [arrived for device, _, arrived in gateway.arrived if device != other]
    others = [(due, arrived) for device, due, arrived in gateway.arrived if device == other]
    done = max(released)
    last = (done - end).total_seconds()
    # The other account's sends due before the end, and those due while the release ran.
    before = [(a - d).total_seconds() * 1000 for d, a in others if d < end]
    during = [(a - d).total_seconds() * 1000 for d, a in others if end <= d <= done]
    return {
        "accepted_s": accepted,
        "hold_s": holding,
        "last_s": last,
        "rate": len(released) / max(last, 1e-3),
        "released": len(released),
        "before": before,
        "during": during,
    }


def spread(values: list[float]) -> str:
    """p50 / p99 / max of ``values`` in ms, or a dash."""
    if not values:
        return "-"
    return f"{percentile(values, 50):.1f} / {percentile(values, 99):.1f} / {max(values):.1f}"


def main() -> None:
    """Run once, print, write the section."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--held", type=int, default=100_000)
    parser.add_argument("--rate", type=float, default=20.0, help="the other account's sends/s")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--quick", action="store_true", help="10,000 held")
    parser.add_argument("--no-write", action="store_true", help="print only")
    args = parser.parse_args()
    if args.quick:
        args.held = 10_000
    rows: list[str] = []
    for _ in range(args.repeat):
        f = run(args.held, args.rate)
        rows.append(
            f"| {f['released']:,} | {f['accepted_s']:.2f} | {f['hold_s']:.0f} | {f['last_s']:.1f}"
            f" | {f['rate']:,.0f} | {len(f['before'])}: {spread(f['before'])}"
            f" | {len(f['during'])}: {spread(f['during'])} |"
        )
        print(rows[-1], flush=True)
    load = os.getloadavg()
    command = f"python -m benchmarks.quiet --held {args.held} --rate {args.rate:.0f}"
    text = f"""`{command} --repeat {args.repeat}` (one process on SQLite,
{platform.machine()}, Python {platform.python_version()}; load average {load[0]:.1f} /
{load[1]:.1f} / {load[2]:.1f} at the end). Target (issue 29): 100,000 held deliveries all out
within 60 s of the quiet's end, the engine's lateness for other accounts unchanged meanwhile.

| held | stream send accepted s | held after s | last out after the end s | released/s | other account before the end: p50 / p99 / max ms | during the release |
|---|---|---|---|---|---|---|
{chr(10).join(rows)}
"""  # noqa: E501 (a table row)
    print(text)
    if not args.no_write:
        write_run("Quiet hours: releasing held deliveries", text)


if __name__ == "__main__":
    main()

"""Recurring schedules' catch-up: a restart after 10 minutes down with minutely schedules.

    .venv/bin/python -m benchmarks.catchup [--schedules 10000] [--down 10] [--repeat 1]
        [--postgres | --both | --database-url postgresql://...] [--no-write]

(``--both``: SQLite, then a throwaway PostgreSQL cluster, each ``--repeat`` times,
alternated; ``--quick`` is ``--schedules 1000``.)

``--schedules`` minutely schedules (``catchUp`` latest, window 3600 s) are
bulk-inserted as the service left them when it went down ``--down`` minutes
ago: each one's next occurrence is the first minute at or after the moment it
stopped (nothing of the outage was made). The clock is the real one, set so
that the restart falls 15 s into a minute (no occurrence sits at the edge of
the 5 s grace). Then the materialiser's own loop starts (a pass a second, as
``pushctl serve`` runs it) and the catch-up is done when no schedule has an
occurrence before the restart left: its time is reported, with the passes'
CPU time. Checked after: each schedule made exactly one notification for the
outage's ``--down`` occurrences (the newest) and counted the others missed
(API.md, ``catchUp``: ``latest``).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import platform
import tempfile
import time
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from benchmarks.localtime import JumpingClock
from benchmarks.processes import Postgres, library_settings, postgres
from benchmarks.report import write_run
from benchmarks.schedules import ACCOUNT, add_account, insert, schedule_of
from pushcore import build_services
from pushcore.delivery.recurring import Materialiser
from pushcore.domain.recurring import Schedule
from pushcore.runtime.system import UlidGenerator


def minutely(count: int, down_at: datetime) -> Iterator[Schedule]:
    """``count`` minutely schedules in UTC, placed at their first minute from ``down_at``."""
    ids = UlidGenerator()
    start = (down_at - timedelta(hours=1)).replace(tzinfo=None, second=0, microsecond=0)
    for i in range(count):
        yield schedule_of(i, "FREQ=MINUTELY", "UTC", start, down_at, ids)


async def catch_up(services: Any, clock: JumpingClock, restart: datetime) -> tuple[float, float]:
    """Run the materialiser until nothing before ``restart`` is left: (seconds, CPU seconds)."""
    materialiser = Materialiser(services.schedules.maker, clock)
    began, cpu = time.perf_counter(), time.process_time()
    task = asyncio.create_task(materialiser.run())
    try:
        while True:
            with services.store.read() as tx:
                earliest = tx.schedules.earliest()
            if earliest is None or earliest > restart:
                return time.perf_counter() - began, time.process_time() - cpu
            await asyncio.sleep(0.05)
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


def check(services: Any, down_at: datetime, restart: datetime, down: int) -> dict[str, int]:
    """How many schedules made exactly one notification for the outage and missed the rest."""
    first = down_at.replace(second=0, microsecond=0) + timedelta(minutes=1)
    marks = [first + timedelta(minutes=m) for m in range(down)]
    assert all(down_at <= m < restart for m in marks)
    right = wrong = 0
    cursor: str | None = None
    while True:
        # A read a page: PostgreSQL's store bounds how long one transaction may take.
        with services.store.read() as tx:
            page = tx.schedules.list(ACCOUNT, None, 100, cursor)
            for schedule in page:
                found = [tx.occurrences.notification_of(schedule.id, m) for m in marks]
                made = sum(f is not None for f in found)
                ok = made == 1 and found[-1] is not None and schedule.missed == down - 1
                right, wrong = right + ok, wrong + (not ok)
        if len(page) < 100:
            break
        cursor = page[-1].id
    return {"right": right, "wrong": wrong}


def run(count: int, down: int, url: str | None) -> dict[str, Any]:
    """One round; the figures."""
    with tempfile.TemporaryDirectory() as tmp:
        clock = JumpingClock()
        # The restart falls 15 s past the next minute but one (the insert takes a few
        # seconds); the outage began ``down`` minutes and 10 s before it, so ``down``
        # minute marks fell in it.
        now = clock.now()
        restart = now.replace(second=15, microsecond=0) + timedelta(minutes=2)
        down_at = restart - timedelta(minutes=down, seconds=10)
        services = build_services(library_settings(Path(tmp) / "data", url), clock=clock)
        try:
            add_account(services, ACCOUNT, now)
            insert(services, minutely(count, down_at))
            if clock.now() > restart:
                raise SystemExit("the insert took past the planned restart: run fewer schedules")
            clock.jump(restart - clock.now())
            took, cpu = asyncio.run(catch_up(services, clock, restart))
            print(f"caught up in {took:.1f} s ({cpu:.1f} s of CPU); checking", flush=True)
            verdict = check(services, down_at, restart, down)
        finally:
            services.close()
    return {"took_s": took, "cpu_s": cpu, **verdict}


def main() -> None:
    """Run the rounds, print each row, write the section."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--schedules", type=int, default=10_000)
    parser.add_argument("--down", type=int, default=10, help="minutes the service was down")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--database-url", default=None)
    parser.add_argument("--postgres", action="store_true", help="a throwaway PostgreSQL cluster")
    parser.add_argument("--both", action="store_true", help="SQLite and PostgreSQL, alternated")
    parser.add_argument("--quick", action="store_true", help="1,000 schedules")
    parser.add_argument("--no-write", action="store_true", help="print only")
    args = parser.parse_args()
    if args.quick:
        args.schedules = 1_000
    rows: list[str] = []
    with contextlib.ExitStack() as stack:
        pg = None
        if args.postgres or args.both:
            pg = stack.enter_context(postgres(args.database_url))
        for _ in range(args.repeat):
            urls = [None, pg] if args.both else [pg if pg is not None else args.database_url]
            for where in urls:
                url = where.fresh() if isinstance(where, Postgres) else where
                f = run(args.schedules, args.down, url)
                database = "SQLite" if url is None else "PostgreSQL"
                rows.append(
                    f"| {args.schedules:,} | {database} | {f['took_s']:.1f} | {f['cpu_s']:.1f}"
                    f" | {f['right']:,} | {f['wrong']:,} |"
                )
                print(rows[-1], flush=True)
    load = os.getloadavg()
    flags = " --both" if args.both else " --postgres" if args.postgres else ""
    text = f"""`python -m benchmarks.catchup --schedules {args.schedules} --down {args.down}{flags}
--repeat {args.repeat}` (one process, {platform.machine()}, Python
{platform.python_version()}; load average {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} at
the end). Target (issue 28): catch-up done within 30 s, exactly the pinned number of
notifications per schedule (``latest``: one of the outage's {args.down}, {args.down - 1} missed).

| minutely schedules | database | catch-up s | CPU s | schedules right | wrong |
|---|---|---|---|---|---|
{chr(10).join(rows)}
"""
    print(text)
    if not args.no_write:
        write_run("Recurring schedules: catch-up after an outage", text)


if __name__ == "__main__":
    main()

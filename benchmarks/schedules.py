"""Recurring schedules at scale: daily schedules in 50 zones, their lateness and their cost.

    .venv/bin/python -m benchmarks.schedules [--schedules 100000] [--minutes 30]
        [--live 120] [--between 3] [--repeat 1] [--postgres | --database-url postgresql://...]
        [--no-write]

``--schedules`` daily schedules of one pro account (one android device) in 50
zones, their times spread over the day (about ``schedules / 1440`` fall due a
minute), are bulk-inserted through the store port, each placed at its next
occurrence as a create places it (``reposition``), so inserting 100,000 takes
seconds rather than the API's one transaction each.

1. Live, ``--live`` seconds of real time: an engine (in-process gateway that
   answers at once and notes arrival), the materialiser's own loop (a pass a
   second) and, for each occurrence due in that window, a one-off notification
   of another account due ``--offset`` s after it (the same rate; by default halfway
   to the next instant, see :func:`halfway`). Lateness = arrival at
   the gateway - due time, for occurrences and one-offs apart. ``--between N``: N more
   bursts of the same size between each two whole minutes of that window (extra
   daily schedules at :15, :30 and :45 for 3), so that a p99 is not one sample's
   luck; per late delivery (over ``--slow`` ms) what the process was doing
   (benchmarks/schedules_timeline.py: a materialiser pass, a claim, a collection).
2. Materialising, with the engine stopped: the clock jumps a minute at a time
   through ``--minutes`` minutes; each step's ``Maker.run_once`` is timed (its
   wall and CPU time): the cost of materialising them per minute.
3. The database's size (SQLite files, or ``pg_database_size``).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import platform
import statistics
import tempfile
import time
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo, available_timezones

from benchmarks.localtime import JumpingClock, percentile
from benchmarks.processes import library_settings, postgres
from benchmarks.report import write_run
from benchmarks.schedules_timeline import IdGateway, Timeline
from pushcore import build_services
from pushcore.bootstrap import build_engine
from pushcore.domain.inputs import NewNotification
from pushcore.domain.model import Account, Device, Plan, Platform
from pushcore.domain.recurring import Schedule, reposition
from pushcore.domain.schedules import CatchUpMode, ScheduleState
from pushcore.recurrence.dateutil_rules import DateutilExpander
from pushcore.runtime.heap import settle_heap
from pushcore.runtime.system import UlidGenerator
from pushcore.storage.sql.schedules import SCHEDULES

ACCOUNT = "acct_bench"
OTHER = "acct_oneoff"
CHUNK = 1_000
HEAD = (
    "| schedules | database | occurrences: n: p50 / p99 / max ms | one-offs: n: p50 / p99 / max ms"
    " | made a minute | pass: median ms | pass: max ms | database MB | insert s |"
)


def zones50() -> list[str]:
    """50 zones spread over the list of IANA names (the same ones each run)."""
    return sorted(z for z in available_timezones() if "/" in z)[::10][:50]


def schedule_of(
    i: int, rrule: str, zone: str, start: datetime, now: datetime, ids: UlidGenerator
) -> Schedule:
    """An ACTIVE schedule of ACCOUNT, placed at its first occurrence from ``now``."""
    fresh = Schedule(
        id=ids.new_id("sch"),
        account_id=ACCOUNT,
        name=f"s{i}",
        state=ScheduleState.ACTIVE,
        rrule=rrule,
        start=start,
        time_zone=zone,
        exdates=(),
        catch_up_mode=CatchUpMode.LATEST,
        catch_up_window=3600,
        template={"title": f"occurrence {i}"},
        stream_id=None,
        next_occurrence_at=None,
        last_occurrence_at=None,
        sent=0,
        missed=0,
        revision=1,
        created_at=now,
        anchor=start,
        anchor_before=0,
    )
    placed, _ = reposition(fresh, EXPANDER, now)
    return placed


EXPANDER = DateutilExpander()


def add_account(services: Any, account: str, now: datetime) -> str:
    """A pro account with one android device; the device's id."""
    ids = UlidGenerator()
    device = Device(ids.new_id("dev"), account, Platform.ANDROID, f"tok-{account}", None, now)
    with services.store.transaction() as tx:
        tx.accounts.ensure(Account(account, Plan.PRO, now))
        tx.devices.add(device)
    services.accounts.set_plan(account, Plan.PRO)
    return device.id


def insert(services: Any, schedules: Iterator[Schedule]) -> int:
    """Store the schedules, CHUNK to a transaction (one executemany: on PostgreSQL a
    statement a schedule was a round trip each, minutes for 100,000); how many."""
    count = 0
    batch: list[Schedule] = []
    for schedule in [*schedules, None]:
        if schedule is not None:
            batch.append(schedule)
        if len(batch) >= CHUNK or (schedule is None and batch):
            with services.store.transaction() as tx:
                sql = tx.schedules._sql  # the rows as the store port's add() writes them
                encode = SCHEDULES.codec(sql.dialect).encode
                sql.many(SCHEDULES.insert, [encode(one) for one in batch])
            count += len(batch)
            batch = []
    return count


def skip_overdue(services: Any, since: datetime) -> int:
    """Move on, as if made, the schedules that fell due before ``since`` (while the
    others were being inserted): the live part measures what falls due on time, not a
    catch-up (benchmarks/catchup.py measures that); how many were moved."""
    with services.store.transaction() as tx:
        overdue = tx.schedules.due(since, since, 1_000_000)
        for schedule in overdue:
            placed, _ = reposition(schedule, EXPANDER, since)
            tx.schedules.update(placed)
    return len(overdue)


def daily(count: int, now: datetime) -> Iterator[Schedule]:
    """``count`` daily schedules in 50 zones, their local times spread over the day."""
    ids, zones = UlidGenerator(), zones50()
    for i in range(count):
        minute = (i * 1440 // count) % 1440
        zone = zones[i % len(zones)]
        start = (now - timedelta(days=2)).astimezone(ZoneInfo(zone)).replace(tzinfo=None)
        start = start.replace(hour=0, minute=0, second=0, microsecond=0)
        rrule = f"FREQ=DAILY;BYHOUR={minute // 60};BYMINUTE={minute % 60}"
        yield schedule_of(i, rrule, zone, start, now, ids)


def between(count: int, now: datetime, seconds: float, bursts: int) -> Iterator[Schedule]:
    """Daily schedules falling due ``bursts`` times between each two whole minutes of the
    next ``seconds`` (as many at each instant as ``count`` spread over the day has)."""
    ids, zones = UlidGenerator(), zones50()
    per = max(1, count // 1440)
    start = now.replace(second=0, microsecond=0)
    step = timedelta(seconds=60 / (bursts + 1))
    instants = [
        at
        for minute in range(int(seconds // 60) + 2)
        for k in range(1, bursts + 1)
        if now + timedelta(seconds=5) < (at := start + timedelta(minutes=minute) + k * step)
        and at <= now + timedelta(seconds=seconds)
    ]
    for i, at in enumerate(at for at in instants for _ in range(per)):
        zone = zones[i % len(zones)]
        local = at.astimezone(ZoneInfo(zone))
        first = (now - timedelta(days=2)).astimezone(ZoneInfo(zone)).replace(tzinfo=None)
        first = first.replace(hour=0, minute=0, second=0, microsecond=0)
        rrule = f"FREQ=DAILY;BYHOUR={local.hour};BYMINUTE={local.minute};BYSECOND={local.second}"
        yield schedule_of(count + i, rrule, zone, first, now, ids)


def halfway(bursts: int) -> float:
    """The one-offs' default offset: half the time between two instants of occurrences,
    to the whole second below, and a quarter second (7.25 s with 3 bursts between
    whole minutes). Each instant of either kind then comes after seconds of idle:
    0.25 s after the occurrences, as before, the one-offs came right after a burst's
    claim, sends and records, and the occurrences always after 15 s of idle, so the
    two kinds were claimed in unlike situations (docs/benchmarks.md). Not x.5 s: the
    materialiser's passes run there (delivery/recurring.py)."""
    return float(int(60 / (bursts + 1) / 2)) + 0.25


async def live(
    services: Any,
    clock: JumpingClock,
    seconds: float,
    devices: dict[str, str],
    slow_ms: float,
    offset: float,
) -> Any:
    """Engine and materialiser for ``seconds``; one one-off per occurrence due meanwhile."""
    gateway = IdGateway(clock)
    timeline = Timeline(clock)
    now = clock.now()
    ends = now + timedelta(seconds=seconds)
    oneoffs = 0
    with services.store.transaction() as tx:
        soon = tx.schedules.due(ends, ends, 1_000_000)
    later = now + timedelta(seconds=2)
    due = [at for s in soon if (at := s.next_occurrence_at) is not None and at > later]
    for at in due:
        request = NewNotification(title="one-off", scheduled_at=at + timedelta(seconds=offset))
        await services.notifications.create(OTHER, request)
        oneoffs += 1
    # The service's engine: its settings' lead, its wake-ups, its materialiser loop.
    engine = build_engine(services, dict.fromkeys(Platform, gateway))
    timeline.watch_passes(services.schedules.maker)
    timeline.watch_claims(engine)
    # As `pushctl serve` and `pushctl worker` do once started (pushcore/runtime/heap.py):
    # without it, the collector's full passes over this process's heap were the p99.
    settle_heap()
    unwatch = timeline.watch_collections()
    tasks = [asyncio.create_task(engine.run())]
    # Creating the one-offs took seconds on a loaded machine: what fell due before the
    # engine started was a catch-up, not its precision.
    later = max(later, clock.now() + timedelta(seconds=2))
    # Each one-off is counted with its occurrence: the one-offs' window is theirs, moved on.
    shift = timedelta(seconds=offset)
    await clock.sleep_until(ends + max(shift, timedelta(0)) + timedelta(seconds=2))
    await engine.stop()
    unwatch()
    del services.schedules.maker.make_due  # the class's own again
    for task in tasks:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
    late: dict[str, list[float]] = {"occurrence": [], "one-off": []}
    for device, due_at, arrived in gateway.arrived:
        # What fell due while the schedules were inserted is a catch-up, not on time.
        kind = "occurrence" if device == devices[ACCOUNT] else "one-off"
        moved = shift if kind == "one-off" else timedelta(0)
        if later + moved < due_at <= ends + moved:
            late[kind].append((arrived - due_at).total_seconds() * 1000)
    kinds = {devices[ACCOUNT]: "occurrences", devices[OTHER]: "one-offs"}
    windows = {"occurrences": (later, ends), "one-offs": (later + shift, ends + shift)}
    print(timeline.report(gateway, kinds, slow_ms, windows), flush=True)
    return late, oneoffs


def size_of(services: Any, data: Path, url: str | None) -> float:
    """The database's size in MB."""
    if url is None:
        return sum(f.stat().st_size for f in data.glob("pushcore.db*")) / 1e6
    import psycopg

    with psycopg.connect(url) as conn:
        row = conn.execute("SELECT pg_database_size(current_database())").fetchone()
    return float(row[0]) / 1e6 if row else 0.0


def run(
    count: int,
    minutes: int,
    seconds: float,
    url: str | None,
    bursts: int,
    slow_ms: float,
    offset: float = 0.25,
) -> dict[str, Any]:
    """One round; the figures."""
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "data"
        clock = JumpingClock()
        services = build_services(library_settings(data, url), clock=clock)
        try:
            now = clock.now()
            devices = {a: add_account(services, a, now) for a in (ACCOUNT, OTHER)}
            began = time.perf_counter()
            insert(services, daily(count, now))
            inserted = time.perf_counter() - began
            skip_overdue(services, clock.now() + timedelta(seconds=5))
            insert(services, between(count, clock.now(), seconds, bursts))
            late, oneoffs = asyncio.run(live(services, clock, seconds, devices, slow_ms, offset))
            passes: list[tuple[float, float]] = []
            made = 0
            for _ in range(minutes):
                clock.jump(timedelta(minutes=1))
                began, cpu = time.perf_counter(), time.process_time()
                made += services.schedules.maker.run_once()
                passes.append((time.perf_counter() - began, time.process_time() - cpu))
            size = size_of(services, data, url)
        finally:
            services.close()
    walls = sorted(w for w, _ in passes)
    return {
        "inserted_s": inserted,
        "late": late,
        "oneoffs": oneoffs,
        "pass_median_ms": statistics.median(walls) * 1000,
        "pass_max_ms": walls[-1] * 1000,
        "pass_cpu_ms": statistics.median(c for _, c in passes) * 1000,
        "made_per_minute": made / max(1, minutes),
        "db_mb": size,
    }


def line(count: int, database: str, figures: dict[str, Any]) -> str:
    """One table row."""
    cells = [f"{count:,}", database]
    for kind in ("occurrence", "one-off"):
        values = figures["late"][kind]
        if values:
            p50, p99 = percentile(values, 50), percentile(values, 99)
            cells.append(f"{len(values)}: {p50:.1f} / {p99:.1f} / {max(values):.1f}")
        else:
            cells.append("none")
    cells += [
        f"{figures['made_per_minute']:.0f}",
        f"{figures['pass_median_ms']:.1f} ({figures['pass_cpu_ms']:.1f} CPU)",
        f"{figures['pass_max_ms']:.1f}",
        f"{figures['db_mb']:.1f}",
        f"{figures['inserted_s']:.0f}",
    ]
    return "| " + " | ".join(cells) + " |"


def main() -> None:
    """Run the rounds, print each row, write the section."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--schedules", "--count", type=int, default=100_000, dest="schedules")
    parser.add_argument("--minutes", type=int, default=30)
    parser.add_argument("--live", type=float, default=120.0, help="seconds of real-time delivery")
    parser.add_argument("--between", type=int, default=3, help="bursts between whole minutes")
    parser.add_argument("--slow", type=float, default=5.0, help="ms: late ones to explain")
    parser.add_argument(
        "--offset", type=float, default=None, help="s from occurrence to one-off (halfway)"
    )
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--database-url", default=None)
    parser.add_argument("--postgres", action="store_true", help="a throwaway PostgreSQL cluster")
    parser.add_argument("--no-write", action="store_true", help="print only")
    args = parser.parse_args()
    if args.offset is None:
        args.offset = halfway(args.between)
    rows: list[str] = []
    with contextlib.ExitStack() as stack:
        pg = stack.enter_context(postgres(args.database_url)) if args.postgres else None
        for _ in range(args.repeat):
            url = pg.fresh() if pg is not None else args.database_url
            database = "SQLite" if url is None else "PostgreSQL"
            figures = run(
                args.schedules, args.minutes, args.live, url, args.between, args.slow, args.offset
            )
            rows.append(line(args.schedules, database, figures))
            print(rows[-1], flush=True)
    load = os.getloadavg()
    on_pg = " --postgres" if args.postgres else ""
    text = f"""`python -m benchmarks.schedules --schedules {args.schedules} --minutes {args.minutes}
--live {args.live:.0f} --between {args.between} --offset {args.offset}{on_pg}`
(one process, {platform.machine()}, Python {platform.python_version()}; load average
{load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} at the end).

{HEAD}
|---|---|---|---|---|---|---|---|---|
{chr(10).join(rows)}
"""
    print(text)
    if not args.no_write:
        write_run("Recurring schedules: daily schedules at scale", text)


if __name__ == "__main__":
    main()

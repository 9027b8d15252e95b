"""Recurring schedules: the cost of making occurrences into notifications, and the bytes.

    .venv/bin/python -m benchmarks.schedules [--count 100000] [--minutes 30] [--repeat 3]
        [--database-url postgresql://...]

``--count`` daily schedules (a pro account) in 50 zones, their times spread over
the day, so that about ``count / 1440`` fall due each minute. A fake clock steps
minute by minute through ``--minutes`` minutes; each step runs one pass of the
engine's loop (services/occurrences.py, ``Maker.run_once``), timed. Printed: the
creation rate, the pass's time per minute (median, p99, max: the cost of
materialising them per minute), the notifications made (each once) and, on
SQLite, the database's size. Webhook lateness is not measured here (the
notifications made are ordinary ones; benchmarks/scheduling.py measures those).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import available_timezones

from pushcore import build_services, load_settings
from pushcore.domain.model import Plan
from tests.fakes.clock import FakeClock
from tests.fakes.icons import FakeIconProbe

ACCOUNT = "acct_bench"
START = datetime(2027, 3, 1, 0, 0, tzinfo=UTC)


def run(count: int, minutes: int, url: str | None) -> dict[str, float]:
    """One round: create ``count`` schedules, then step ``minutes`` minutes; the figures."""
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "data"
        clock = FakeClock(START)
        services = build_services(
            load_settings(env={}, data_dir=data, database_url=url),
            clock=clock,
            icons=FakeIconProbe(),
        )
        try:
            services.accounts.ensure(ACCOUNT)
            services.accounts.set_plan(ACCOUNT, Plan.PRO)
            zones = sorted(z for z in available_timezones() if "/" in z)[::10][:50]
            began = time.perf_counter()
            for i in range(count):
                minute = (i * 1440 // count) % 1440
                body = {
                    "name": f"s{i}",
                    "rrule": f"FREQ=DAILY;BYHOUR={minute // 60};BYMINUTE={minute % 60}",
                    "start": "2027-03-01T00:00:00",
                    "timeZone": zones[i % len(zones)],
                    "template": {"title": f"daily {i}"},
                }
                services.schedules.create(ACCOUNT, body)
            created = time.perf_counter() - began
            passes: list[float] = []
            made = 0
            for _ in range(minutes):
                clock.advance(timedelta(minutes=1))
                began = time.perf_counter()
                made += services.schedules.maker.run_once()
                passes.append(time.perf_counter() - began)
            size = sum(f.stat().st_size for f in data.glob("pushcore.db*")) if url is None else 0
        finally:
            services.close()
    passes.sort()
    return {
        "create_per_s": count / created,
        "pass_median_ms": statistics.median(passes) * 1000,
        "pass_p99_ms": passes[min(len(passes) - 1, int(len(passes) * 0.99))] * 1000,
        "pass_max_ms": passes[-1] * 1000,
        "made": made,
        "db_mb": size / 1e6,
    }


def main() -> None:
    """Run the rounds and print each."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=100_000)
    parser.add_argument("--minutes", type=int, default=30)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--database-url", default=None)
    args = parser.parse_args()
    for round_ in range(1, args.repeat + 1):
        figures = run(args.count, args.minutes, args.database_url)
        shown = ", ".join(f"{k} {v:.1f}" for k, v in figures.items())
        print(f"round {round_}: {args.count} schedules, {args.minutes} minutes: {shown}")


if __name__ == "__main__":
    main()

"""When the materialiser's passes run: half a second past whole seconds, away from the
whole-second instants occurrences (and their deliveries) fall due at."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from pushcore.delivery.recurring import Materialiser, next_pass
from pushcore.domain.model import Plan
from tests.delivery.test_schedules import ALICE, TEMPLATE, open_services
from tests.fakes.clock import FakeClock

# A start a fifth of a second past a whole second, as a process starts at any time.
START = datetime(2027, 3, 1, 8, 0, 0, 200_000, tzinfo=UTC)


@given(
    st.datetimes(datetime(2001, 1, 1), datetime(2100, 1, 1)),
    st.sampled_from([0.5, 1.0, 2.0, 30.0]),
)
def test_a_pass_is_half_a_tick_past_a_whole_tick_and_a_tick_on_on_average(
    naive: datetime, seconds: float
) -> None:
    now, tick = naive.replace(tzinfo=UTC), timedelta(seconds=seconds)
    at = next_pass(now, tick)
    assert tick / 2 <= at - now < tick * 3 / 2
    # On a whole second and a half for a second's tick (x.5 s).
    assert (at - datetime(2000, 1, 1, tzinfo=UTC)) % tick == tick / 2


def test_the_pass_that_makes_a_whole_minutes_occurrence_runs_half_a_second_after_the_minute(
    tmp_path: Path,
) -> None:
    clock = FakeClock(START)
    services = open_services(f"sqlite:///{tmp_path / 'p.db'}", tmp_path / "data", clock)
    services.accounts.ensure(ALICE)
    services.accounts.set_plan(ALICE, Plan.PRO)
    body = {"name": "m", "rrule": "FREQ=MINUTELY", "start": "2027-03-01T08:02:00"}
    schedule = services.schedules.create(ALICE, body | {"template": TEMPLATE})

    def made() -> list[datetime]:
        found = services.notifications.list(ALICE, limit=10, schedule_id=schedule.id)
        return [n.created_at for n in found.items]

    async def scenario() -> list[datetime]:
        loop = asyncio.create_task(Materialiser(services.schedules.maker, clock).run())
        try:
            deadline = time.monotonic() + 10
            # Each sleep of the loop is ended by moving the clock to its end: a pass then.
            while not made():
                assert time.monotonic() < deadline, clock.naps
                sleepers = clock.sleepers
                if sleepers:
                    clock.set(sleepers[0])
                await asyncio.sleep(0.005)
            return made()
        finally:
            loop.cancel()
            await asyncio.gather(loop, return_exceptions=True)

    try:
        # 08:02:00 is made 60 s ahead, by the first pass at or after 08:01:00: at
        # 08:01:00.5, not 08:01:00.2 (or whenever ticks a second from the start fell).
        assert asyncio.run(scenario()) == [datetime(2027, 3, 1, 8, 1, 0, 500_000, tzinfo=UTC)]
    finally:
        services.close()

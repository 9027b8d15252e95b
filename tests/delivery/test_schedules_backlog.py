"""A backlog of schedules' occurrences (a catch-up after an outage): the loop works through
it pass after pass without a tick between, and each schedule of a batch tells its own
`schedule.missed` and `schedule.completed` events."""

from __future__ import annotations

import asyncio
import time
from datetime import timedelta
from pathlib import Path

import pytest

from pushcore.delivery.recurring import Materialiser
from pushcore.domain.model import Plan
from pushcore.services import occurrences
from tests.delivery.test_schedules import (
    ALICE,
    T0,
    TEMPLATE,
    database,
    made_per_occurrence,
    open_services,
)
from tests.fakes.clock import FakeClock

__all__ = ["database"]  # the fixture, parametrized over SQLite and PostgreSQL


def test_a_backlog_larger_than_a_pass_is_made_without_waiting_for_a_tick(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A pass of one batch of two: five due schedules take three passes.
    monkeypatch.setattr(occurrences, "BATCH", 2)
    monkeypatch.setattr(occurrences, "PASS_BATCHES", 1)
    clock = FakeClock(T0)
    services = open_services(f"sqlite:///{tmp_path / 'p.db'}", tmp_path / "data", clock)
    services.accounts.ensure(ALICE)
    services.accounts.set_plan(ALICE, Plan.PRO)
    body = {"name": "m", "rrule": "FREQ=DAILY", "start": "2027-03-01T08:00:30"}
    for _ in range(5):
        services.schedules.create(ALICE, body | {"template": TEMPLATE})

    async def scenario() -> None:
        loop = asyncio.create_task(Materialiser(services.schedules.maker, clock).run())
        try:
            deadline = time.monotonic() + 10
            # The clock never moves: a tick between passes would never end.
            while sum(made_per_occurrence(services).values()) < 5:
                assert time.monotonic() < deadline, made_per_occurrence(services)
                await asyncio.sleep(0.01)
        finally:
            loop.cancel()
            await asyncio.gather(loop, return_exceptions=True)

    try:
        asyncio.run(scenario())
    finally:
        services.close()


def test_each_schedule_of_a_batch_tells_its_own_missed_and_completed_events(
    database: str, tmp_path: Path
) -> None:
    clock = FakeClock(T0)
    services = open_services(database, tmp_path / "data", clock)
    try:
        services.accounts.ensure(ALICE)
        services.accounts.set_plan(ALICE, Plan.PRO)
        body = {"name": "m", "start": "2027-03-01T08:01:00", "template": TEMPLATE}
        ongoing = services.schedules.create(ALICE, body | {"rrule": "FREQ=MINUTELY"})
        ending = services.schedules.create(ALICE, body | {"rrule": "FREQ=MINUTELY;COUNT=3"})
        # Down from 08:00 to 08:10:30: 08:01 to 08:10 fell due meanwhile.
        clock.advance(timedelta(minutes=10, seconds=30))
        services.schedules.maker.run_once()
        with services.store.read() as tx:
            events = tx.events.page(ALICE, None, (), 100)
        told = sorted(
            (e.data["scheduleId"], e.type, e.data.get("missed")) for e in events if e.type
        )
        assert told == sorted(
            [
                (ongoing.id, "schedule.missed", 9),  # 08:10 sent, the nine before missed
                (ending.id, "schedule.missed", 2),  # 08:03 sent, 08:01 and 08:02 missed
                (ending.id, "schedule.completed", None),
            ]
        )
        # The newest of each was made, once.
        made = made_per_occurrence(services)
        assert sorted(made.values()) == [1, 1, 1]  # ongoing: 08:10 and 08:11 (ahead)
    finally:
        services.close()

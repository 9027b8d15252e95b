"""Recurring schedules' occurrences made into notifications by the engine processes:
exactly once with two engines at once, across a kill -9 in the middle of a pass, and
by the loop the engine runs (on the fake clock)."""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import signal
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import attrs
import pytest

from pushcore import build_services, load_settings
from pushcore.delivery.recurring import Materialiser
from pushcore.domain.model import Plan
from pushcore.services import Services
from pushcore.services.occurrences import Maker
from pushcore.storage.sql.dialect import Sql
from tests.fakes.clock import FakeClock
from tests.fakes.icons import FakeIconProbe

ALICE = "acct_alice"
T0 = datetime(2027, 3, 1, 8, 0, tzinfo=UTC)
TEMPLATE = {"title": "Every minute"}


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def database(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A database URL every process of a test shares."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'pushcore.db'}"
    url: str = request.getfixturevalue("pg_cluster").create_database()
    return url


def open_services(url: str, data: Path, clock: FakeClock) -> Services:
    settings = load_settings(env={}, data_dir=data, database_url=url)
    return build_services(settings, clock=clock, icons=FakeIconProbe())


@pytest.fixture
def engines(database: str, tmp_path: Path) -> Iterator[tuple[Services, Services, FakeClock]]:
    """Two processes' services (each its own store) on one database and one fake clock."""
    clock = FakeClock(T0)
    first = open_services(database, tmp_path / "data", clock)
    second = open_services(database, tmp_path / "data", clock)
    yield first, second, clock
    first.close()
    second.close()


def made_per_occurrence(services: Services) -> dict[tuple[str, Any], int]:
    with services.store.read() as tx:
        sql: Sql = tx._sql  # type: ignore[attr-defined]
        rows = sql.all(
            "SELECT schedule_id, schedule_occurrence_at, COUNT(*) FROM notifications"
            " GROUP BY schedule_id, schedule_occurrence_at"
        )
    return {(r[0], r[1]): int(r[2]) for r in rows}


def minutely(services: Services, count: int) -> list[str]:
    services.accounts.ensure(ALICE)
    services.accounts.set_plan(ALICE, Plan.PRO)
    body = {"name": "m", "rrule": "FREQ=MINUTELY", "start": "2027-03-01T08:01:00"}
    return [
        services.schedules.create(ALICE, body | {"template": TEMPLATE}).id for _ in range(count)
    ]


def test_two_engines_make_each_occurrence_once(
    engines: tuple[Services, Services, FakeClock],
) -> None:
    first, second, clock = engines
    ids = minutely(first, 30)
    makers = [first.schedules.maker, second.schedules.maker]
    with ThreadPoolExecutor(2) as pool:
        for _ in range(10):  # five minutes, a pass of both every 30 s
            clock.advance(timedelta(seconds=30))
            list(pool.map(Maker.run_once, makers))
    made = made_per_occurrence(first)
    # 08:01 ... 08:06 (due within the 60 s lead of 08:05:00), each once.
    assert set(made.values()) == {1}
    assert len(made) == 30 * 6
    assert {schedule for schedule, _ in made} == set(ids)
    sent = [first.schedules.get(ALICE, i).sent for i in ids]
    assert sent == [6] * 30


def _die_mid_pass(url: str, data: str) -> None:
    """A child engine: claims an occurrence and its notification, then is killed (kill -9)."""
    services = open_services(url, Path(data), FakeClock(T0 + timedelta(seconds=30)))
    maker = services.schedules.maker
    original = Maker.make_many

    def make_then_die(self: Maker, *args: Any) -> None:
        original(self, *args)
        os.kill(os.getpid(), signal.SIGKILL)

    maker.make_many = make_then_die.__get__(maker)  # type: ignore[method-assign]
    maker.run_once()


def test_a_kill_9_in_the_middle_of_a_pass_makes_nothing_twice(
    engines: tuple[Services, Services, FakeClock], database: str, tmp_path: Path
) -> None:
    first, second, clock = engines
    (schedule_id,) = minutely(first, 1)
    child = multiprocessing.get_context("fork").Process(
        target=_die_mid_pass, args=(database, str(tmp_path / "data"))
    )
    child.start()
    child.join(60)
    assert child.exitcode == -signal.SIGKILL
    # Its transaction died with it: the occurrence is not made, and is made once after.
    assert made_per_occurrence(first) == {}
    clock.advance(timedelta(seconds=30))
    # On PostgreSQL the dead client's server process lets go of its schedule's lock
    # only once it sees the socket closed, which on a busy machine can come after
    # this: a pass skips a locked schedule (as it should), so the passes go on until
    # one makes it, and once more after, and it is made exactly once.
    deadline = time.monotonic() + 15
    first.schedules.maker.run_once()
    second.schedules.maker.run_once()
    while not made_per_occurrence(first):
        assert time.monotonic() < deadline, "the occurrence was never made"
        time.sleep(0.05)
        first.schedules.maker.run_once()
        second.schedules.maker.run_once()
    first.schedules.maker.run_once()
    second.schedules.maker.run_once()
    made = made_per_occurrence(first)
    assert list(made.values()) == [1]
    assert first.schedules.get(ALICE, schedule_id).sent == 1


def test_the_engine_loop_makes_occurrences_ahead_and_at_once_for_a_start_of_now(
    tmp_path: Path,
) -> None:
    clock = FakeClock(T0)
    services = open_services(f"sqlite:///{tmp_path / 'p.db'}", tmp_path / "data", clock)

    def count() -> int:
        return sum(made_per_occurrence(services).values())

    async def until(goal: int) -> None:
        deadline = time.monotonic() + 10
        while count() < goal:
            assert time.monotonic() < deadline, f"{count()} made, not {goal}"
            await asyncio.sleep(0.01)

    async def scenario() -> None:
        loop = asyncio.create_task(Materialiser(services.schedules.maker, clock).run())
        try:
            await asyncio.sleep(0)
            body = {"name": "n", "rrule": "FREQ=HOURLY", "template": TEMPLATE}
            services.schedules.create(ALICE, body)  # start: now, so due now
            await until(1)  # nudged: made without the clock moving
            while not clock.sleepers:  # the loop rests until its next tick
                await asyncio.sleep(0.01)
            clock.advance(timedelta(minutes=59))  # the next, 60 s ahead of 09:00
            await until(2)
        finally:
            loop.cancel()
            await asyncio.gather(loop, return_exceptions=True)

    try:
        asyncio.run(scenario())
    finally:
        services.close()


def test_a_schedule_that_cannot_be_made_holds_back_no_other(
    engines: tuple[Services, Services, FakeClock],
) -> None:
    first, _, clock = engines
    broken, fine = minutely(first, 2)
    with first.store.transaction() as tx:
        found = tx.schedules.get(ALICE, broken)
        assert found is not None
        # As if an upgrade no longer took its template.
        tx.schedules.update(attrs.evolve(found, template={"title": ""}))
    clock.advance(timedelta(seconds=30))
    first.schedules.maker.run_once()
    assert {schedule for schedule, _ in made_per_occurrence(first)} == {fine}


def test_a_notification_that_cannot_be_made_holds_back_no_other_of_its_batch(
    engines: tuple[Services, Services, FakeClock], monkeypatch: pytest.MonkeyPatch
) -> None:
    first, _, clock = engines
    broken, fine = minutely(first, 2)
    compose = Maker._compose

    def failing(self: Maker, tx: Any, schedule: Any, *args: Any) -> Any:
        if schedule.id == broken:
            raise RuntimeError("as a bug would")
        return compose(self, tx, schedule, *args)

    # The batch's notifications are made at once; one failing sends the batch one by one.
    monkeypatch.setattr(Maker, "_compose", failing)
    clock.advance(timedelta(seconds=30))
    assert first.schedules.maker.run_once() == 1
    assert {schedule for schedule, _ in made_per_occurrence(first)} == {fine}
    assert [first.schedules.get(ALICE, i).sent for i in (broken, fine)] == [0, 1]
    monkeypatch.undo()
    first.schedules.maker.run_once()  # the broken one is not lost: made once it can be
    made = made_per_occurrence(first)
    assert set(made.values()) == {1}
    assert {schedule for schedule, _ in made} == {broken, fine}

"""The run loop: how long it sleeps, what wakes it, how it stops.

These start the real loop (``engine.start()``) on the fake clock. Its sleeps
are real ``asyncio`` waits of the fake-clock distance, capped by the
``tick`` backstop, which is set to 30 s where only a wake-up may make the
loop look early: a missing wake-up shows as a timeout of :func:`until`.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from datetime import datetime, timedelta

import attrs
import pytest

from pushcore.bootstrap import build_engine
from pushcore.delivery import DeliveryEngine
from pushcore.delivery.engine import Claim
from pushcore.domain.model import Platform
from pushcore.domain.outcomes import Dispatch, Outcome, Retry
from pushcore.domain.states import DeliveryStatus, NotificationStatus
from pushcore.ports import Gateway
from tests.delivery.conftest import DUE, LEASE, T0, Harness, until

N = NotificationStatus
MS = timedelta(milliseconds=1)
BACKSTOP = timedelta(seconds=30)


@pytest.fixture
def claims() -> list[datetime]:
    """Where :func:`watch` puts the fake times of an engine's claims."""
    return []


def watch(engine: DeliveryEngine, seen: list[datetime], monkeypatch: pytest.MonkeyPatch) -> None:
    """Record the fake time of each claim ``engine`` makes."""
    original = engine._claim

    def counted(now: datetime, limit: int) -> Claim:
        seen.append(now)
        return original(now, limit)

    monkeypatch.setattr(engine, "_claim", counted)


def planned(engine: DeliveryEngine) -> datetime | None:
    """Until when the loop plans to sleep (None while it works)."""
    return engine._planned


def test_the_loop_sleeps_exactly_until_the_next_due_time(h: Harness) -> None:
    h.device("tok-a")
    h.notify()
    engine = h.engine(tick=30.0)

    async def scenario() -> None:
        task = engine.start()
        assert engine.running
        await until(lambda: planned(engine) is not None)
        assert planned(engine) == DUE
        await engine.stop()
        await task

    asyncio.run(scenario())
    assert not engine.running
    assert h.gateway.sent == []


def test_with_nothing_to_do_the_loop_sleeps_its_backstop_tick(h: Harness) -> None:
    engine = h.engine(tick=30.0)

    async def scenario() -> None:
        task = engine.start()
        await until(lambda: planned(engine) is not None)
        assert planned(engine) == T0 + BACKSTOP
        started = time.monotonic()
        await engine.stop()  # wakes the sleeping loop: no 30 s wait
        await task
        assert time.monotonic() - started < 5

    asyncio.run(scenario())


def test_a_wake_earlier_than_the_planned_sleep_wakes_the_loop(
    h: Harness, claims: list[datetime], monkeypatch: pytest.MonkeyPatch
) -> None:
    h.device("tok-a")
    engine = h.engine(tick=30.0)
    watch(engine, claims, monkeypatch)

    async def scenario() -> None:
        task = engine.start()
        await until(lambda: planned(engine) is not None)
        assert claims == [T0]

        def from_another_thread() -> None:
            h.notify()  # due at DUE; this engine is not on the services' hub
            h.clock.set(DUE)
            engine.wake(DUE)

        await asyncio.to_thread(from_another_thread)
        await until(lambda: len(h.gateway.sent) == 1)
        await engine.drain()
        await engine.stop()
        await task

    asyncio.run(scenario())
    assert claims[:2] == [T0, DUE]
    assert h.gateway.sent[0].at == DUE


def test_a_wake_not_earlier_than_the_planned_sleep_does_not_wake_it(
    h: Harness, claims: list[datetime], monkeypatch: pytest.MonkeyPatch
) -> None:
    engine = h.engine(tick=30.0)
    watch(engine, claims, monkeypatch)

    async def scenario() -> None:
        task = engine.start()
        await until(lambda: planned(engine) is not None)
        until_then = planned(engine)
        assert until_then is not None
        assert engine._wakeup is not None

        await asyncio.to_thread(engine.wake, until_then + timedelta(seconds=1))
        await asyncio.to_thread(engine.wake, until_then)
        await asyncio.sleep(0.1)
        assert claims == [T0]
        assert not engine._wakeup.is_set()

        await asyncio.to_thread(engine.wake, until_then - MS)
        await until(lambda: len(claims) == 2)
        await engine.stop()
        await task

    asyncio.run(scenario())


def test_creating_a_notification_wakes_the_engine_through_the_hub(h: Harness) -> None:
    h.device("tok-a")
    gateways: dict[Platform, Gateway] = dict.fromkeys(Platform, h.gateway)
    engine = build_engine(h.services, gateways=gateways, owner="test")
    h.engines.append(engine)
    assert h.services.hub.engine is engine
    assert engine.owner == "test"
    # Only the wake-up can make it look before 30 real seconds.
    engine.config = attrs.evolve(engine.config, tick=30.0)

    async def scenario() -> None:
        task = engine.start()
        await until(lambda: planned(engine) == T0 + BACKSTOP)
        # As an HTTP request would, from a worker thread: due now (a past scheduledAt).
        n = await asyncio.to_thread(h.notify, scheduledAt="2026-11-21T09:00:00Z")
        await until(lambda: h.status(n) is N.DELIVERED)
        await engine.stop()
        await task

    asyncio.run(scenario())
    assert h.gateway.tokens() == ["tok-a"]
    assert h.gateway.sent[0].at == T0


def test_registering_a_device_wakes_the_engine_for_a_waiting_notification(
    h: Harness,
) -> None:
    gateways: dict[Platform, Gateway] = dict.fromkeys(Platform, h.gateway)
    engine = build_engine(h.services, gateways=gateways, owner="test")
    h.engines.append(engine)
    h.notify()
    h.step(engine, DUE)  # no device: it waits (SCHEDULED) for a day
    engine.config = attrs.evolve(engine.config, tick=30.0)

    async def scenario() -> None:
        task = engine.start()
        await until(lambda: planned(engine) == DUE + BACKSTOP)
        await asyncio.to_thread(h.device, "tok-a")
        await until(lambda: len(h.gateway.sent) == 1)
        await engine.drain()
        await engine.stop()
        await task

    asyncio.run(scenario())
    assert h.gateway.sent[0].at == DUE


def test_a_retry_wakes_the_loop_for_its_due_time(h: Harness) -> None:
    h.device("tok-a")
    h.gateway.script("tok-a", Retry("Service Unavailable"))
    n = h.notify()
    engine = h.engine(tick=30.0)
    h.clock.set(DUE)
    retry_at = DUE + timedelta(milliseconds=500)

    async def scenario() -> None:
        task = engine.start()
        # Without the wake-up it would sleep to the batch's lease end (or the backstop).
        await until(lambda: planned(engine) == retry_at)
        assert len(h.gateway.sent) == 1
        h.clock.set(retry_at)  # the loop's real 0.5 s sleep ends and it looks again
        await until(lambda: h.status(n) is N.DELIVERED)
        await engine.stop()
        await task

    asyncio.run(scenario())
    assert [s.at for s in h.gateway.sent] == [DUE, retry_at]
    assert retry_at < DUE + LEASE


def test_the_backstop_tick_finds_work_nobody_woke_it_for(h: Harness) -> None:
    h.device("tok-a")
    engine = h.engine(tick=0.02)

    async def scenario() -> None:
        task = engine.start()
        await until(lambda: planned(engine) is not None)
        # Another process adds work: no wake-up reaches this one.
        n = await asyncio.to_thread(h.notify)
        h.clock.set(DUE)
        await until(lambda: h.status(n) is N.DELIVERED)
        await engine.stop()
        await task

    asyncio.run(scenario())
    assert len(h.gateway.sent) == 1


def test_wake_without_a_running_loop_is_harmless(h: Harness) -> None:
    engine = h.engine()
    engine.wake(T0)  # never started

    async def briefly() -> None:
        task = engine.start()
        await until(lambda: planned(engine) is not None)
        await engine.stop()
        await task

    asyncio.run(briefly())
    engine.wake(T0)  # its loop is closed now


LEAD = timedelta(milliseconds=20)


def test_with_a_lead_it_claims_early_and_sends_at_the_due_time(h: Harness) -> None:
    h.device("tok-a")
    note = h.notify()
    engine = h.engine(tick=30.0, lead=LEAD)

    async def scenario() -> None:
        task = engine.start()
        # It plans to look a lead before the due time, not at it.
        await until(lambda: planned(engine) == DUE - LEAD)
        h.clock.set(DUE - LEAD)
        engine.wake(DUE)  # the fake clock moved: look now
        await until(lambda: [d.status for d in h.deliveries(note)] == [DeliveryStatus.IN_FLIGHT])
        await asyncio.sleep(0.1)
        assert h.gateway.sent == []  # claimed, held: never early
        h.clock.set(DUE - MS)
        await asyncio.sleep(0.05)
        assert h.gateway.sent == []
        h.clock.set(DUE)
        await until(lambda: len(h.gateway.sent) == 1)
        await engine.drain()
        await engine.stop()
        await task

    asyncio.run(scenario())
    assert [s.at for s in h.gateway.sent] == [DUE]
    assert h.status(note) is N.DELIVERED


def test_a_held_delivery_is_handed_back_if_the_engine_stops_first(h: Harness) -> None:
    h.device("tok-a")
    note = h.notify()
    engine = h.engine(tick=30.0, lead=LEAD, shutdown_grace=0.1)

    async def scenario() -> None:
        task = engine.start()
        h.clock.set(DUE - LEAD)
        engine.wake(DUE)
        await until(lambda: [d.status for d in h.deliveries(note)] == [DeliveryStatus.IN_FLIGHT])
        await engine.stop()  # the clock never reaches the due time
        await task

    asyncio.run(scenario())
    assert h.gateway.sent == []
    (delivery,) = h.deliveries(note)
    assert (delivery.status, delivery.attempts) == (DeliveryStatus.PENDING, 0)


def test_batches_finishing_together_are_recorded_in_one_transaction(
    h: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    h.device("tok-a")
    notes = [h.notify() for _ in range(3)]
    engine = h.engine(batch_size=1)
    records: list[int] = []
    original = engine._record

    def counted(pairs: Sequence[tuple[Dispatch, Outcome]]) -> datetime | None:
        records.append(len(pairs))
        return original(pairs)

    monkeypatch.setattr(engine, "_record", counted)
    h.gateway.hold()
    h.clock.set(DUE)

    async def scenario() -> None:
        await engine.tick()  # three batches of one, all held at the gateway
        await until(lambda: h.gateway.waiting == 3)
        h.gateway.let_go()  # they finish together
        await engine.drain()

    asyncio.run(scenario())
    assert sorted(records) == [1, 2] or records == [3]  # not one transaction each
    assert [h.status(n) for n in notes] == [N.DELIVERED] * 3

"""The run loop: how long it sleeps, what wakes it, how it stops.

These start the real loop (``engine.start()``) on the fake clock. Every wait
of the engine is a sleep on that clock, which ends only when the test moves
the clock past it: no test here waits for real time to pass. The ``tick``
backstop is set to 30 s where only a wake-up may make the loop look early,
and the clock is never moved that far.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

import attrs
import pytest

from pushcore.bootstrap import build_engine
from pushcore.config import load_settings
from pushcore.delivery import DeliveryEngine
from pushcore.domain.model import Platform
from pushcore.domain.outcomes import Delivered, Dispatch, Outcome, Retry
from pushcore.domain.states import DeliveryStatus, NotificationStatus
from pushcore.ports import Gateway
from tests.delivery.conftest import (
    DUE,
    LEASE,
    T0,
    Harness,
    WatchedStore,
    stop_at_grace_end,
    until,
)

N = NotificationStatus
MS = timedelta(milliseconds=1)
BACKSTOP = timedelta(seconds=30)


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
        await until(lambda: h.clock.sleepers == [T0 + BACKSTOP])
        assert planned(engine) == T0 + BACKSTOP
        await engine.stop()  # wakes the sleeping loop: the clock never moves
        await task

    asyncio.run(scenario())
    assert h.clock.now() == T0
    assert h.clock.sleepers == []


def test_a_wake_earlier_than_the_planned_sleep_wakes_the_loop(h: Harness) -> None:
    h.device("tok-a")
    engine = h.engine(tick=30.0)

    async def scenario() -> None:
        task = engine.start()
        await until(lambda: h.clock.sleepers == [T0 + BACKSTOP])

        def from_another_thread() -> None:
            h.notify()  # due at DUE; this engine is not on the services' hub
            h.clock.set(DUE)  # 25 s before the loop's own sleep ends
            engine.wake(DUE)

        await asyncio.to_thread(from_another_thread)
        await until(lambda: len(h.gateway.sent) == 1)
        await engine.drain()
        await engine.stop()
        await task

    asyncio.run(scenario())
    assert h.gateway.sent[0].at == DUE


def test_a_wake_not_earlier_than_the_planned_sleep_does_not_wake_it(h: Harness) -> None:
    engine = h.engine(tick=30.0)

    async def scenario() -> None:
        task = engine.start()
        await until(lambda: h.clock.sleepers == [T0 + BACKSTOP])
        until_then = planned(engine)
        assert until_then is not None
        assert engine._wakeup is not None
        naps = len(h.clock.naps)

        # wake() hands its decision to the loop: one turn later it has been made.
        engine.wake(until_then + timedelta(seconds=1))
        engine.wake(until_then)
        await asyncio.sleep(0)
        assert not engine._wakeup.is_set()
        assert planned(engine) == until_then

        engine.wake(until_then - MS)
        await asyncio.sleep(0)
        assert engine._wakeup.is_set()
        # It looked again (a claim) and went back to sleep: one more nap.
        await until(lambda: len(h.clock.naps) == naps + 1 and planned(engine) is not None)
        await engine.stop()
        await task

    asyncio.run(scenario())
    assert h.clock.now() == T0


def counting_claims(engine: DeliveryEngine) -> list[datetime]:
    """The times of the engine's claims from now on (each claim's ``now``)."""
    claims: list[datetime] = []
    claim = engine._ledger.claim

    def counted(now: datetime, *args: Any, **kwargs: Any) -> Any:
        claims.append(now)
        return claim(now, *args, **kwargs)

    engine._ledger.claim = counted  # type: ignore[method-assign]
    return claims


def test_a_wake_while_it_works_for_later_work_does_not_start_another_claim(
    h: Harness,
) -> None:
    # Under a stream of creates due in an hour, every claim used to see a wake-up
    # that came while it ran and start the next claim at once: ~60 write
    # transactions a second taking the writers' lock from the creates.
    engine = h.engine(tick=30.0)
    claims = counting_claims(engine)

    async def scenario() -> None:
        task = engine.start()
        engine.wake(T0 + timedelta(hours=1))  # before its first claim has run
        await until(lambda: planned(engine) is not None)
        assert planned(engine) == T0 + BACKSTOP
        await asyncio.sleep(0)
        assert h.clock.sleepers == [T0 + BACKSTOP]
        await engine.stop()
        await task

    asyncio.run(scenario())
    assert claims == [T0]


def test_a_wake_while_it_works_for_work_before_its_plan_is_not_lost(h: Harness) -> None:
    h.device("tok-a")
    engine = h.engine(tick=30.0)
    claims = counting_claims(engine)
    claim = engine._ledger.claim

    def first_misses_it(now: datetime, *args: Any, **kwargs: Any) -> Any:
        found = claim(now, *args, **kwargs)
        if len(claims) == 1:
            h.notify()  # stored after the first claim looked (on the claim's thread)
        return found

    engine._ledger.claim = first_misses_it  # type: ignore[method-assign]

    async def scenario() -> None:
        task = engine.start()
        engine.wake(DUE)  # while it works: before its first claim has run
        # The first claim found nothing, so its own plan was the 30 s backstop; the
        # wake-up made it look again, and that claim plans for the due time.
        await until(lambda: planned(engine) == DUE)
        h.clock.set(DUE)
        await until(lambda: len(h.gateway.sent) == 1)
        await engine.drain()
        await engine.stop()
        await task

    asyncio.run(scenario())
    assert h.gateway.sent[0].at == DUE
    assert claims[:2] == [T0, T0]


def test_creating_a_notification_wakes_the_engine_through_the_hub(h: Harness) -> None:
    h.device("tok-a")
    gateways: dict[Platform, Gateway] = dict.fromkeys(Platform, h.gateway)
    engine = build_engine(h.services, gateways=gateways, owner="test")
    h.engines.append(engine)
    assert h.services.wakes.engine is engine
    assert engine.owner == "test"
    # Only the wake-up can make it look before 30 real seconds.
    engine.config = attrs.evolve(engine.config, tick=30.0)

    async def scenario() -> None:
        task = engine.start()
        await until(lambda: planned(engine) == T0 + BACKSTOP)
        # As an HTTP request would, on the loop: due now (a past scheduledAt).
        n = await h.notify_async(scheduledAt="2026-11-21T09:00:00Z")
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
    retry_at = DUE + timedelta(milliseconds=1500)

    async def scenario() -> None:
        task = engine.start()
        # Without the wake-up it would sleep to the batch's lease end (or the backstop).
        await until(lambda: planned(engine) == retry_at)
        assert len(h.gateway.sent) == 1
        h.clock.set(retry_at)  # the loop's sleep ends and it looks again
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
        n = await h.notify_async()
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
        h.clock.set(DUE - LEAD)  # the loop's sleep ends
        await until(lambda: [d.status for d in h.deliveries(note)] == [DeliveryStatus.IN_FLIGHT])
        # Claimed, and held until the clock says it is due: never early.
        await until(lambda: DUE in h.clock.sleepers)
        assert h.gateway.sent == []
        h.clock.set(DUE - MS)
        await asyncio.sleep(0)
        assert DUE in h.clock.sleepers
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
    # A grace period shorter than the lead: it ends before the due time.
    engine = h.engine(tick=30.0, lead=LEAD, shutdown_grace=0.01)

    async def scenario() -> None:
        task = engine.start()
        await until(lambda: planned(engine) == DUE - LEAD)
        h.clock.set(DUE - LEAD)
        await until(lambda: DUE in h.clock.sleepers)  # claimed and held
        await stop_at_grace_end(h, engine)
        await task

    asyncio.run(scenario())
    assert h.clock.now() < DUE
    assert h.gateway.sent == []
    (delivery,) = h.deliveries(note)
    assert (delivery.status, delivery.attempts) == (DeliveryStatus.PENDING, 0)


def test_batches_finishing_together_are_recorded_in_one_transaction(h: Harness) -> None:
    h.device("tok-a")
    notes = [h.notify() for _ in range(3)]
    store = WatchedStore(h.services.store)
    engine = h.engine(batch_size=1, store=store)
    h.gateway.hold()
    h.clock.set(DUE)

    async def scenario() -> int:
        await engine.tick()  # three batches of one, all held at the gateway
        await until(lambda: h.gateway.waiting == 3)
        claims = store.transactions
        h.gateway.let_go()  # they finish together
        await engine.drain()
        return store.transactions - claims

    records = asyncio.run(scenario())
    assert records in (1, 2)  # not one transaction each
    assert [h.status(n) for n in notes] == [N.DELIVERED] * 3


class InFlightGateway:
    """Answers at once; notes, at each send, how many the engine has in flight."""

    def __init__(self) -> None:
        self.engine: DeliveryEngine | None = None
        self.in_flight: list[int] = []
        self.sent = 0

    async def send(self, dispatches: Sequence[Dispatch]) -> Sequence[Outcome]:
        assert self.engine is not None
        self.in_flight.append(self.engine.in_flight)
        self.sent += len(dispatches)
        return [Delivered() for _ in dispatches]

    async def aclose(self) -> None:
        pass


@pytest.mark.parametrize(("record_cost", "bounded"), [(0.001, True), (1e-7, False)])
def test_a_burst_is_handed_no_faster_than_its_answers_can_be_recorded_in_time(
    h: Harness, record_cost: float, bounded: bool
) -> None:
    # 600 due at one instant, claimed ahead by the burst lead. Where one answer's record
    # costs 1 ms, a record of 60 ms (pace.py's budget) holds few: the engine hands at
    # most 256 at a time (each hand once the one before is recorded), not the in-flight
    # cap's 8,192, so no answer waits long for its record. Where records are cheap, the
    # whole instant goes at once.
    notes = []
    for account in (f"acc-{a}" for a in range(6)):  # 100 devices each: the free plan's most
        for i in range(100):
            h.device(f"{account}-{i:03}", account=account)
        notes.append(h.notify(account))
    gateway = InFlightGateway()
    engine = h.engine(
        tick=30.0, lead=LEAD, burst_lead=timedelta(seconds=1), claim_cost=0.01,
        record_cost=record_cost, gateway=gateway,
    )  # fmt: skip
    gateway.engine = engine

    async def scenario() -> None:
        task = engine.start()
        await until(lambda: planned(engine) == DUE - timedelta(seconds=1))
        h.clock.set(DUE - timedelta(seconds=1))
        claimed = DeliveryStatus.IN_FLIGHT
        await until(lambda: all(d.status is claimed for n in notes for d in h.deliveries(n)))
        await until(lambda: DUE in h.clock.sleepers)
        assert gateway.sent == 0
        h.clock.set(DUE)
        await until(lambda: gateway.sent == 600)
        await engine.drain()
        await engine.stop()
        await task

    asyncio.run(scenario())
    assert (max(gateway.in_flight) <= 256) is bounded
    assert {h.status(n, n.account_id) for n in notes} == {N.DELIVERED}


@pytest.mark.parametrize(
    ("claim_cost", "lead"),
    [(0.001, timedelta(milliseconds=400)), (0.01, timedelta(seconds=1))],
)
def test_many_due_at_one_instant_are_claimed_as_far_ahead_as_claiming_them_takes(
    h: Harness, claim_cost: float, lead: timedelta
) -> None:
    # 200 deliveries due together at twice 1 ms each: claimed 0.4 s early; at 10 ms
    # each, 4 s: claimed the most, 1 s, early. Still sent at their due time, never
    # before.
    notes = []
    for account in ("acc-a", "acc-b"):
        for i in range(100):
            h.device(f"{account}-{i:03}", account=account)
        notes.append(h.notify(account))
    engine = h.engine(tick=30.0, lead=LEAD, claim_cost=claim_cost, burst_lead=timedelta(seconds=1))

    async def scenario() -> None:
        task = engine.start()
        await until(lambda: planned(engine) == DUE - lead)
        h.clock.set(DUE - lead)
        claimed = DeliveryStatus.IN_FLIGHT
        await until(lambda: all(d.status is claimed for n in notes for d in h.deliveries(n)))
        await until(lambda: DUE in h.clock.sleepers)
        assert h.gateway.sent == []
        h.clock.set(DUE)
        await until(lambda: len(h.gateway.sent) == 200)
        await engine.drain()
        await engine.stop()
        await task

    asyncio.run(scenario())
    assert {s.at for s in h.gateway.sent} == {DUE}
    assert [h.status(n, n.account_id) for n in notes] == [N.DELIVERED, N.DELIVERED]


def test_the_service_claims_an_instant_of_many_ahead_unless_turned_off(h: Harness) -> None:
    # On by default (1 s; delivery/lead.py says what it costs), off with
    # PUSHCORE_SCHEDULER_BURST_LEAD_SECONDS=0. 200 deliveries due together take longer
    # to claim than the 20 ms lead, so the service's engine claims them earlier than
    # that (twice its estimate of 0.3 ms each: 120 ms) and sends them at DUE.
    notes = []
    for account in ("acc-a", "acc-b"):
        for i in range(100):
            h.device(f"{account}-{i:03}", account=account)
        notes.append(h.notify(account))
    gateways: dict[Platform, Gateway] = dict.fromkeys(Platform, h.gateway)
    settings = load_settings(
        env={"PUSHCORE_SCHEDULER_BURST_LEAD_SECONDS": "0"},
        data_dir=h.services.settings.data_dir,
        database_url=h.services.settings.database_url,
    )
    off = build_engine(attrs.evolve(h.services, settings=settings), gateways=gateways, owner="0")
    assert off.config.burst_lead == timedelta(0)
    engine = build_engine(h.services, gateways=gateways, owner="test")
    h.engines.append(engine)
    assert engine.config.burst_lead == timedelta(seconds=1)
    engine.config = attrs.evolve(engine.config, tick=30.0)

    async def scenario() -> datetime:
        task = engine.start()
        await until(lambda: (planned(engine) or DUE) < DUE)
        woke = planned(engine)
        assert woke is not None
        h.clock.set(woke)
        claimed = DeliveryStatus.IN_FLIGHT
        await until(lambda: all(d.status is claimed for n in notes for d in h.deliveries(n)))
        assert h.gateway.sent == []
        h.clock.set(DUE)
        await until(lambda: len(h.gateway.sent) == 200)
        await engine.drain()
        await engine.stop()
        await task
        return woke

    woke = asyncio.run(scenario())
    assert woke < DUE - engine.config.lead
    assert {s.at for s in h.gateway.sent} == {DUE}
